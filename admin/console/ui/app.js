// The console's pages and its router: sign-in, the overview, the search of
// companies, a company, a webhook endpoint. It runs last of the scripts.
"use strict";

function signInView(message) {
  const token = h("input", { type: "password", id: "token", autocomplete: "off", required: true });
  const actor = h("input", { id: "actor", value: store.getItem("actor") || "", placeholder: "e.g. ana.silva", required: true });
  const err = h("p", { class: "error", id: "signin-error", role: "alert" }, message || "");
  const form = h("form", { id: "signin", onsubmit: async (e) => {
    e.preventDefault();
    store.setItem("adminToken", token.value.trim());
    store.setItem("actor", actor.value.trim());
    signingIn = true;
    try {
      await api("GET", "/admin/v1/overview?top=1");
      location.hash = "#/";
      render();
    } catch (x) {
      store.removeItem("adminToken");
      err.textContent = x.status === 401 ? "That admin token is not the gateway's." : problemText(x);
    } finally {
      signingIn = false;
    }
  } },
  h("label", {}, "Admin token", token), h("label", {}, "Your name (recorded in the audit log)", actor),
  h("button", { class: "primary", type: "submit" }, "Sign in"), err);
  return h("div", { class: "signin panel" }, h("h1", {}, "Sign in"),
    h("p", { class: "muted" }, "The token stays in this tab only and is sent with each request; closing the tab forgets it."), form);
}

// route is the page the address names.
function route() {
  const m = location.hash.match(/^#\/(company|webhook|companies)\/(.*)$/);
  if (!m) return overviewView();
  const arg = decodeURIComponent(m[2]);
  if (m[1] === "company") return companyView(arg);
  if (m[1] === "webhook") return webhookView(arg);
  return companiesView(arg);
}

// rendering counts the pages asked for: a page that answers after a newer
// one was asked for is dropped, never drawn over it (nor is its error).
let rendering = 0;

async function render(message) {
  const page = ++rendering;
  const draw = (el) => { if (page === rendering) main.replaceChildren(el); };
  const signedIn = !!store.getItem("adminToken");
  for (const id of ["goto", "companies-link", "signout"]) document.getElementById(id).hidden = !signedIn;
  document.getElementById("who").textContent = signedIn ? store.getItem("actor") || "" : "";
  if (!signedIn) {
    main.replaceChildren(signInView(message));
    return;
  }
  try {
    draw(h("p", { class: "muted" }, "Loading…"));
    draw(await route());
  } catch (x) {
    draw(h("p", { class: "error", id: "page-error" }, problemText(x)));
  }
}

document.getElementById("signout").addEventListener("click", () => signOut("Signed out."));
// The header's search: an id opens its company, anything else searches
// names and NIFs.
document.getElementById("goto").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = document.getElementById("goto-id").value.trim();
  location.hash = (isUUID(text) ? "#/company/" : "#/companies/") + enc(text);
});
window.addEventListener("hashchange", () => render());
render();
