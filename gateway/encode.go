package gateway

import (
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/internal/jsonstr"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The API's resources are written by hand-rolled appenders (web writes
// them into pooled buffers, through resourceEncoder): encoding/json costs a
// list page of 20 invoices some 220 allocations (every Decimal and
// Timestamp goes through a Marshaler whose output is then re-validated) and
// most of the request's CPU time. The bytes are exactly encoding/json's
// (same field order, same escaping, HTML characters included);
// encode_test.go checks that on every resource type and fails when a type
// gains a field the appenders do not know. Anything else (errors, admin
// answers) still goes through encoding/json.

// resourceEncoder is the public listener's web.Encoder: the appenders.
type resourceEncoder struct{}

func (resourceEncoder) AppendJSON(b []byte, v any) []byte { return appendJSON(b, v) }

// listPage is a list's answer: the envelope, with the next page's cursor.
type listPage[T any] struct {
	invoicing.Page[T]
	NextCursor *string `json:"nextCursor"` // null on the last page
}

// appendPage appends the list envelope, each item by appendItem.
func appendPage[T any](b []byte, p *listPage[T], appendItem func([]byte, *T) []byte) []byte {
	b = append(b, `{"data":`...)
	if p.Data == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Data {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendItem(b, &p.Data[i])
		}
		b = append(b, ']')
	}
	b = appendPageEnd(b, p.Total, p.Page.Page, p.PageSize)
	b = append(b[:len(b)-1], `,"nextCursor":`...)
	b = appendStringPtr(b, p.NextCursor)
	return append(b, '}')
}

// appendJSON appends the API's resource types; nil for any other type.
func appendJSON(b []byte, v any) []byte {
	switch v := v.(type) {
	case listPage[invoicing.Invoice]:
		return appendPage(b, &v, appendInvoice)
	case listPage[invoicing.Client]:
		return appendPage(b, &v, appendClient)
	case invoicing.Client:
		return appendClient(b, &v)
	case invoicing.Invoice:
		return appendInvoice(b, &v)
	}
	return nil
}

func appendPageEnd(b []byte, total int64, page, size int) []byte {
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, total, 10)
	b = append(b, `,"page":`...)
	b = strconv.AppendInt(b, int64(page), 10)
	b = append(b, `,"pageSize":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	return append(b, '}')
}

func appendClient(b []byte, c *invoicing.Client) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, c.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, c.Name)
	// The nullable text members, in the resource's order (an array on the
	// stack: no allocation).
	for _, m := range [...]struct {
		key string
		v   *string
	}{{`,"nif":`, c.NIF}, {`,"email":`, c.Email}, {`,"phone":`, c.Phone}, {`,"address":`, c.Address}, {`,"type":`, c.Type}} {
		b = append(b, m.key...)
		b = appendStringPtr(b, m.v)
	}
	b = append(b, `,"createdAt":`...)
	b = appendTimestamp(b, &c.CreatedAt)
	b = append(b, `,"updatedAt":`...)
	b = appendTimestamp(b, &c.UpdatedAt)
	return append(b, '}')
}

func appendInvoice(b []byte, inv *invoicing.Invoice) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, inv.ID)
	b = append(b, `,"number":`...)
	b = appendString(b, inv.Number)
	b = append(b, `,"type":`...)
	b = appendString(b, inv.Type)
	b = append(b, `,"status":`...)
	b = appendString(b, inv.Status)
	b = append(b, `,"totalAmount":`...)
	b = appendDecimal(b, inv.TotalAmount)
	b = append(b, `,"currency":`...)
	b = appendString(b, inv.Currency)
	b = append(b, `,"issuedAt":`...)
	b = appendTimestamp(b, inv.IssuedAt)
	b = append(b, `,"dueDate":`...)
	b = appendStringPtr(b, inv.DueDate)
	b = append(b, `,"customer":{"id":`...)
	b = appendStringPtr(b, inv.Customer.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, inv.Customer.Name)
	b = append(b, `,"nif":`...)
	b = appendStringPtr(b, inv.Customer.NIF)
	b = append(b, `},"items":`...)
	if inv.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range inv.Items {
			it := &inv.Items[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"description":`...)
			b = appendString(b, it.Description)
			b = append(b, `,"quantity":`...)
			b = appendDecimal(b, it.Quantity)
			b = append(b, `,"unitPrice":`...)
			b = appendDecimal(b, it.UnitPrice)
			b = append(b, `,"total":`...)
			b = appendDecimal(b, it.Total)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"updatedAt":`...)
	b = appendTimestamp(b, &inv.UpdatedAt)
	if t := inv.Transmission; t != nil {
		b = append(b, `,"transmission":{"status":`...)
		b = appendString(b, t.Status)
		b = append(b, `,"requestId":`...)
		b = appendStringPtr(b, t.RequestID)
		b = append(b, `,"submittedAt":`...)
		b = appendTimestamp(b, t.SubmittedAt)
		b = append(b, `,"checkedAt":`...)
		b = appendTimestamp(b, t.CheckedAt)
		b = append(b, `,"errors":`...)
		if t.Errors == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, e := range t.Errors {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"code":`...)
				b = appendString(b, e.Code)
				b = append(b, `,"message":`...)
				b = appendString(b, e.Message)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendTimestamp writes what backend.Timestamp.MarshalJSON writes; nil is null.
func appendTimestamp(b []byte, t *invoicing.Timestamp) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendMillis(b, t.UTC())
}

// appendMillis writes t (UTC) as "2006-01-02T15:04:05.000Z" in quotes, as
// AppendFormat with that layout does, digit by digit: AppendFormat reads its
// layout on every call, and a list of 20 invoices writes 40 timestamps.
// Years outside 0-9999 take AppendFormat's way.
func appendMillis(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, "2006-01-02T15:04:05.000Z")
		return append(b, '"')
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
}

// appendDecimal writes what backend.Decimal.MarshalJSON writes: the number's
// canonical text (made by the adapter from the database's exact numerics).
func appendDecimal(b []byte, d invoicing.Decimal) []byte {
	if d == "" {
		return append(b, "null"...)
	}
	return append(b, d...)
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendString quotes s exactly as encoding/json does by default: HTML
// characters, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s, jsonstr.JSON) }
