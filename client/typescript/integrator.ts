// An integrator's program: the six operations of the invoicing API through
// openapi-fetch, typed by what openapi-typescript generates from the
// gateway's OpenAPI document (schema.ts), with default settings. CI
// type-checks it with `tsc --strict` and runs it against the demo
// (cmd/gateway/integrators_test.go); docs/integrators.md, Clients, shows
// the same recipe.
//
//   BASE_URL=http://localhost:8080 API_KEY=igw_… COMPANY_ID=… npx tsx integrator.ts
import { randomUUID } from "node:crypto";
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type Invoice = components["schemas"]["Invoice"];
type Problem = components["schemas"]["Problem"];
type FeedEvent = components["schemas"]["FeedEvent"];

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`set ${name}`);
  return v;
}

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(`failed: ${what}`);
}

function fail(what: string, p: Problem): never {
  throw new Error(`${what}: ${p.status} ${p.code}: ${p.detail} (request ${p.requestId})`);
}

// The origin alone: the document's paths carry /api/v1/v1.
const api = createClient<paths>({
  baseUrl: env("BASE_URL"),
  headers: { Authorization: `Bearer ${env("API_KEY")}`, "X-Company-Id": env("COMPANY_ID") },
});

// Every item of a list, by cursor: nextCursor after nextCursor until null
// (no item twice or missed while others are issued).
async function* allInvoices(query: { status?: Invoice["status"]; type?: Invoice["type"] }): AsyncGenerator<Invoice> {
  let cursor: string | undefined;
  do {
    const { data, error } = await api.GET("/api/v1/v1/invoices", { params: { query: { ...query, pageSize: 100, cursor } } });
    if (error) fail("list invoices", error);
    yield* data.data;
    cursor = data.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

// The events feed's walker: oldest first by cursor until caught up
// (hasMore false), each event once; it returns the cursor to poll from next
// time (keep it with what you processed). A cursor is bound to its filters.
async function pollEvents(cursor: string | undefined, type: string, handle: (e: FeedEvent) => void): Promise<string> {
  for (;;) {
    const { data, error } = await api.GET("/api/v1/v1/events", { params: { query: { pageSize: 100, type, cursor } } });
    if (error) fail("list events", error);
    data.data.forEach(handle);
    cursor = data.nextCursor ?? cursor;
    if (!data.hasMore && cursor !== undefined) return cursor;
  }
}

// 1. List invoices: typed items, the status filter, money as numbers.
let overdue = 0;
let cents = 0; // amounts added in integer cents: exact below 2^53 cents
for await (const inv of allInvoices({ status: "OVERDUE" })) {
  check(inv.status === "OVERDUE" && (inv.type === "FT" || inv.type === "ND"), `only FT and ND are OVERDUE, not ${inv.type}`);
  for (const item of inv.items) check(item.quantity > 0 && item.unitPrice.toFixed(2) !== "", "typed items");
  cents += Math.round(inv.totalAmount * 100);
  overdue++;
}
check(overdue > 0, "the demo has overdue invoices");

const { data: firstPage, error: listError } = await api.GET("/api/v1/v1/invoices", { params: { query: { pageSize: 1 } } });
if (listError) fail("list invoices", listError);
const first = firstPage.data[0];
check(first !== undefined && firstPage.total >= 1, "a first invoice");

// 2. Get invoice: transmission is required on this operation's answer.
const { data: invoice, error: getError } = await api.GET("/api/v1/v1/invoices/{id}", { params: { path: { id: first.id } } });
if (getError) fail("get invoice", getError);
const transmission: string = invoice.transmission.status;
check(invoice.id === first.id && transmission !== "", "the invoice asked for, with its transmission");

// Errors are the document's Problem, its code typed.
const { error: missing, response } = await api.GET("/api/v1/v1/invoices/{id}", {
  params: { path: { id: "00000000-0000-4000-8000-000000000000" } },
});
check(response.status === 404 && missing?.code === "not_found", "an unknown id is 404 not_found");

// 3. List clients, with a search.
const { data: clients, error: clientsError } = await api.GET("/api/v1/v1/clients", { params: { query: { search: "a", pageSize: 5 } } });
if (clientsError) fail("list clients", clientsError);
check(clients.data.every((c) => c.name.toLowerCase().includes("a") || (c.nif ?? "").includes("A")), "search matches");

// Where the events feed is now: the next polls see what comes after.
let feedCursor = await pollEvents(undefined, "client.created", () => {});

// 4. Create client: a new Idempotency-Key for this client (resent unchanged
// on a retry of the same create).
const nif = String(5_000_000_000 + Math.floor(Math.random() * 999_999_999));
const { data: created, error: createError, response: createdResponse } = await api.POST("/api/v1/v1/clients", {
  params: { header: { "Idempotency-Key": randomUUID() } },
  body: { name: "Integrador TS Lda", nif, type: "COMPANY", phone: "+244 923 456 789" },
});
if (createError) fail("create client", createError);
check(createdResponse.status === 201 && createdResponse.headers.get("Location") === `/api/v1/v1/clients/${created.id}`, "201 with Location");
check(created.nif === nif && created.phone === "+244923456789" && created.email === null, "the client as sent, normalized");

const { error: again } = await api.POST("/api/v1/v1/clients", { body: { name: "Outra", nif } });
check(again?.code === "nif_conflict" && again.existingClientId === created.id, "the same NIF again is 409 nif_conflict, naming the client");

// 5. Get client.
const { data: fetched, error: fetchError } = await api.GET("/api/v1/v1/clients/{id}", { params: { path: { id: created.id } } });
if (fetchError) fail("get client", fetchError);
check(fetched.id === created.id && fetched.type === "COMPANY", "the created client");

// 6. List events: the client just created comes in the feed as
// client.created, once (the feed records changes a few seconds after them).
let createdEvents = 0;
for (let i = 0; i < 60 && createdEvents === 0; i++) {
  if (i > 0) await new Promise((r) => setTimeout(r, 500));
  feedCursor = await pollEvents(feedCursor, "client.created", (e) => {
    if (e.type === "client.created" && e.data["id"] === created.id) createdEvents++;
  });
}
check(createdEvents === 1, "the created client's client.created, once, in the feed");

// What the types refuse (tsc fails if any of these compiles).
// @ts-expect-error: status is an enum
void api.GET("/api/v1/v1/invoices", { params: { query: { status: "LATE" } } });
// @ts-expect-error: paths are written in full
void api.GET("/invoices");
// @ts-expect-error: name is required
void api.POST("/api/v1/v1/clients", { body: { nif: "123456789" } });

console.log(`ok: ${overdue} overdue invoices (${(cents / 100).toFixed(2)} AOA), invoice ${first.id}, client ${created.id}`);
