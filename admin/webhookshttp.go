package admin

import (
	"encoding/json"
	"net/http"

	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// The admin API of webhook endpoints (webhooks.go): each handler reads its
// request, calls the operation the command line calls too, and returns its
// view.

func (s *Webhooks) adminCreateWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	m, fe, err := web.ReadJSONBody(r, []string{"mode", "url", "types", "description", "enabled"})
	if err != nil {
		return web.Answer{}, err
	}
	spec := WebhookSpec{CompanyID: p.ByName("id")}
	modeS, _ := web.StringMember(m, "mode", &fe)
	if spec.Mode, err = invoicing.ParseMode(modeS); err != nil {
		fe = append(fe, web.FieldError{Field: "mode", Message: "must be LIVE or TEST"})
	}
	var ok bool
	if spec.URL, ok = web.StringMember(m, "url", &fe); !ok {
		fe = append(fe, web.FieldError{Field: "url", Message: "is required"})
	}
	spec.Description, _ = web.StringMember(m, "description", &fe)
	fe = append(fe, checkTexts(textField{"url", spec.URL}, textField{"description", spec.Description})...)
	spec.Types = typesMember(m, &fe)
	if enabled, given := boolMember(m, "enabled", &fe); given {
		spec.Disabled = !enabled
	}
	if len(fe) > 0 {
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The webhook endpoint is invalid.", Fields: fe}
	}
	v, err := s.CreateWebhook(r.Context(), actor(r), spec)
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusCreated, Body: v, Location: "/admin/v1/webhooks/" + v.ID}, nil
}

func (s *Webhooks) adminListWebhooks(r *http.Request, p web.Params) (web.Answer, error) {
	eps, err := s.ListWebhooks(r.Context(), p.ByName("id"))
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Body: map[string]any{"data": eps}}, nil
}

func (s *Webhooks) adminGetWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.Webhook(r.Context(), p.ByName("id")))
}

func (s *Webhooks) adminUpdateWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	m, fe, err := web.ReadJSONBody(r, []string{"url", "types", "description", "enabled"})
	if err != nil {
		return web.Answer{}, err
	}
	var patch events.Patch
	if v, ok := web.StringMember(m, "url", &fe); ok {
		patch.URL = &v
	}
	if v, ok := web.StringMember(m, "description", &fe); ok {
		patch.Description = &v
	}
	if _, ok := m["types"]; ok {
		t := typesMember(m, &fe)
		patch.Types = &t
	}
	if v, ok := boolMember(m, "enabled", &fe); ok {
		patch.Enabled = &v
	}
	fe = append(fe, checkTexts(patchTexts(patch)...)...)
	if len(fe) > 0 {
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The change is invalid.", Fields: fe}
	}
	return result(s.UpdateWebhook(r.Context(), actor(r), p.ByName("id"), patch))
}

func (s *Webhooks) adminDeleteWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.DeleteWebhook(r.Context(), actor(r), p.ByName("id")))
}

// adminRotateWebhookSecret rotates the secret: {"overlapSeconds": N}, or no
// body for the default overlap (a day).
func (s *Webhooks) adminRotateWebhookSecret(r *http.Request, p web.Params) (web.Answer, error) {
	overlap, err := readOverlap(r, events.DefaultOverlap, events.MaxOverlap)
	if err != nil {
		return web.Answer{}, err
	}
	v, err := s.RotateWebhookSecret(r.Context(), actor(r), p.ByName("id"), overlap)
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusCreated, Body: v}, nil
}

// patchTexts are the text fields a change of an endpoint sets.
func patchTexts(p events.Patch) []textField {
	var out []textField
	if p.URL != nil {
		out = append(out, textField{"url", *p.URL})
	}
	if p.Description != nil {
		out = append(out, textField{"description", *p.Description})
	}
	return out
}

// typesMember reads "types": an array of event type names (absent or null:
// every type).
func typesMember(m map[string]json.RawMessage, fe *[]web.FieldError) []string {
	raw, ok := m["types"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var types []string
	if json.Unmarshal(raw, &types) != nil {
		*fe = append(*fe, web.FieldError{Field: "types", Message: "must be an array of event types such as [\"invoice.paid\"]"})
		return nil
	}
	if types == nil {
		types = []string{}
	}
	return types
}

// boolMember reads an optional boolean member.
func boolMember(m map[string]json.RawMessage, name string, fe *[]web.FieldError) (v, given bool) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return false, false
	}
	if json.Unmarshal(raw, &v) != nil {
		*fe = append(*fe, web.FieldError{Field: name, Message: "must be true or false"})
		return false, false
	}
	return v, true
}
