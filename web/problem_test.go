package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/invoicing"
)

// A code that this layer makes itself and an adapter defines too is the same
// row of the API's table for both.
func TestCodesAgree(t *testing.T) {
	shared := 0
	for _, info := range invoicing.Codes() {
		pc, ok := httpCodes[info.Code]
		if !ok {
			continue
		}
		shared++
		if pc.Status != statusOf(info.Kind) || pc.Title != info.Title {
			t.Errorf("%s: this layer answers %d %q, the adapter's definition %d %q", info.Code, pc.Status, pc.Title, statusOf(info.Kind), info.Title)
		}
	}
	if shared == 0 {
		t.Fatal("no code shared by this layer and the adapters: the check above checked nothing")
	}
}

// An adapter's new error is answered by its kind, code, title and detail
// without any change here: the errors below are not in any table of this
// package (and not defined, so the API's list of codes stays as documented).
func TestAdapterErrorsNeedNoTable(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		detail string
		retry  string
	}{
		{&invoicing.Error{Kind: invoicing.Conflict, Code: "example_taken", Title: "Example taken", Detail: "The example is taken.", Message: "example: taken"}, 409, "The example is taken.", ""},
		{fmt.Errorf("%w: %q", &invoicing.Error{Kind: invoicing.Invalid, Code: "example_invalid", Title: "Invalid example", Message: "example: invalid"}, "x"), 400, `example: invalid: "x"`, ""},
		{fmt.Errorf("dial: %w", &invoicing.Error{Kind: invoicing.Unavailable, Code: "example_down", Title: "Example down", Detail: "Retry later.", Message: "example: down"}), 503, "Retry later.", "1"},
		{&invoicing.Error{Kind: invoicing.Limited, Code: "example_busy", Title: "Example busy", Detail: "Slow down.", Message: "example: busy"}, 429, "Slow down.", "1"},
		{&invoicing.Error{Kind: invoicing.NotFound, Code: "example_gone", Title: "Example gone", Detail: "Gone.", Message: "example: gone"}, 404, "Gone.", ""},
	} {
		rec := answerError(Answers{}, c.err)
		var body problemBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: %v", c.err, err)
		}
		var k *invoicing.Error
		errors.As(c.err, &k)
		if rec.Code != c.status || body.Status != c.status || body.Code != k.Code || body.Title != k.Title || body.Detail != c.detail ||
			body.Type != problemTypeBase+k.Code || rec.Header().Get("Retry-After") != c.retry {
			t.Errorf("%v: %d Retry-After %q %+v", c.err, rec.Code, rec.Header().Get("Retry-After"), body)
		}
	}
}

// An invoicing.Error that does not say what it is (no code, or Internal)
// is a fault: 500, its text not shown.
func TestUnclassifiedAdapterErrorIsInternal(t *testing.T) {
	for _, err := range []error{
		&invoicing.Error{Kind: invoicing.Conflict, Title: "No code", Message: "secret text"},
		&invoicing.Error{Code: "internal_thing", Title: "Internal", Message: "secret text"},
	} {
		p := Problem(err)
		if p.Code != "internal_error" || p.Status() != 500 || p.Detail == "secret text" {
			t.Errorf("%#v: %s %d %q", err, p.Code, p.Status(), p.Detail)
		}
	}
}

// heldError is an adapter's conflict that names the caller's client holding
// what was asked for (invoicing.ClientConflict), as backend's NIF conflict
// does.
type heldError struct{ id string }

func (e heldError) Error() string            { return "example: held by " + e.id }
func (e heldError) Unwrap() error            { return errExampleHeld }
func (e heldError) ExistingClientID() string { return e.id }

var errExampleHeld = &invoicing.Error{Kind: invoicing.Conflict, Code: "example_held", Title: "Example held", Detail: "The example is held.", Message: "example: held"}

// An adapter's error that names the caller's client it conflicts with is
// answered with that client's id and, on a listener that serves the API's
// resources, where to get it, whatever its type: this layer knows the
// interface, not the adapter.
func TestClientConflictNamesTheClient(t *testing.T) {
	const id, prefix = "3b9a8f51-2c4d-4e6f-8a1b-2c3d4e5f6a7b", "/api/v1/v1"
	api := Answers{APIPrefix: prefix}
	p := api.Problem(fmt.Errorf("create: %w", heldError{id}))
	if p.Status() != 409 || p.Code != "example_held" || p.ExistingClientID != id ||
		p.Detail != "The example is held: "+prefix+"/clients/"+id+"." {
		t.Errorf("%d %s %q %q", p.Status(), p.Code, p.ExistingClientID, p.Detail)
	}
	// Without the API's prefix: the id, and the plain detail.
	if p := Problem(heldError{id}); p.ExistingClientID != id || p.Detail != "The example is held." {
		t.Errorf("no prefix: %q %q", p.ExistingClientID, p.Detail)
	}
	// One that cannot name it is the plain conflict.
	if p := api.Problem(heldError{}); p.ExistingClientID != "" || p.Detail != "The example is held." {
		t.Errorf("unnamed: %q %q", p.ExistingClientID, p.Detail)
	}
	_, body := problemJSON(api.Problem(heldError{id}), "req")
	var b map[string]any
	if err := json.Unmarshal(body, &b); err != nil || b["existingClientId"] != id {
		t.Errorf("body %s: %v", body, err)
	}
}

// answerError is what a listener writing by a answers for err.
func answerError(a Answers, err error) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	c := newChain(Config{Answers: a})
	_, _ = c.writeAnswers(func(http.ResponseWriter, *http.Request) (Answer, error) { return Answer{}, err })(rec, httptest.NewRequest("GET", "/", nil))
	return rec
}

// Every problem's type is the code's anchor in the portal's errors guide.
func TestProblemTypesPointAtTheGuide(t *testing.T) {
	if problemTypeBase != apidocs.ErrorsPath+"#" {
		t.Errorf("problem types point at %q, the errors guide is at %q", problemTypeBase, apidocs.ErrorsPath)
	}
}
