package web

import (
	"bytes"
	"strconv"
)

// framer follows a connection's requests as net/http reads them (see
// framing.go), a byte at a time across reads: each head's request line
// (hashed up to its target, and its protocol), its Content-Length and
// Transfer-Encoding fields (continuation lines included), then its body by
// the rules net/http follows. Where net/http would refuse the bytes (and
// close the connection), or they are anything it might read otherwise, the
// framer stops following them (lost): it never guesses.
type framer struct {
	st fstate

	// The head being read.
	key      uint64
	spaces   int
	proto    []byte // after the second space of the request line
	field    watched
	name     [len("transfer-encoding")]byte
	nameLen  int
	val      []byte  // the value of the watched field being read
	pending  watched // the field val belongs to, finished at the next field
	clFirst  []byte
	clCount  int
	clBad    bool
	teCount  int
	teChunk  bool
	overflow bool

	// The body being skipped.
	remaining uint64
	digits    int
}

type fstate uint8

const (
	sReqStart    fstate = iota // before a request line (CR and LF skipped)
	sReqLine                   // method and target, hashed
	sProto                     // the protocol, to the line's end
	sLineStart                 // a header line's first byte
	sLineCR                    // a CR at a line's start: the head's end
	sName                      // a field name, which may be a watched one
	sValueLead                 // spaces before a watched field's value
	sValue                     // a watched field's value
	sSkip                      // the rest of a line
	sBody                      // remaining bytes of a body of known length
	sChunkSize                 // a chunk's size
	sChunkExt                  // the rest of a chunk's size line
	sChunkData                 // remaining bytes of a chunk
	sChunkCR                   // the CR after a chunk
	sChunkLF                   // the LF after a chunk
	sTrailer                   // a trailer line's first byte
	sTrailerCR                 // a CR at a trailer line's start: the end
	sTrailerLine               // the rest of a trailer line
	sLost                      // not followed any more
)

type watched uint8

const (
	fieldOther watched = iota
	fieldCL
	fieldTE
)

func (p *framer) lose() { p.st = sLost }

// feed reads b, the next bytes of the connection, calling push with each
// head as it ends.
func (p *framer) feed(b []byte, push func(head)) {
	for i := 0; i < len(b); i++ {
		switch p.st {
		case sLost:
			return
		case sBody, sChunkData:
			n := min(p.remaining, uint64(len(b)-i))
			p.remaining -= n
			i += int(n) - 1
			if p.remaining == 0 && p.st == sBody {
				p.st = sReqStart
			} else if p.remaining == 0 {
				p.st = sChunkCR
			}
		case sReqLine: // method and target, hashed in a tight loop
			for ; i < len(b); i++ {
				c := b[i]
				if c == '\n' || c == ' ' && p.spaces == 1 {
					p.step(c, push)
					break
				}
				if c == ' ' {
					p.spaces++
				}
				p.key = (p.key ^ uint64(c)) * fnvPrime
			}
		case sSkip, sTrailerLine, sChunkExt: // to the line's end at once
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				return
			}
			i += j
			p.step('\n', push)
		default:
			p.step(b[i], push)
		}
	}
}

// step reads one byte of a head, a chunk's framing or a trailer.
func (p *framer) step(c byte, push func(head)) {
	switch p.st {
	case sReqStart:
		if c != '\r' && c != '\n' {
			*p = framer{st: sReqLine, key: fnvOffset, proto: p.proto[:0], val: p.val[:0], clFirst: p.clFirst[:0]}
			p.step(c, push)
		}
	case sReqLine:
		switch {
		case c == '\n':
			p.lose() // no protocol: net/http refuses it
		case c == ' ' && p.spaces == 1:
			p.st = sProto
		default:
			if c == ' ' {
				p.spaces++
			}
			p.key = (p.key ^ uint64(c)) * fnvPrime
		}
	case sProto:
		if c == '\n' {
			p.proto = bytes.TrimSuffix(p.proto, []byte("\r"))
			p.st = sLineStart
		} else if len(p.proto) <= len("HTTP/1.1\r") {
			p.proto = append(p.proto, c)
		}
	case sLineStart, sLineCR, sName, sValueLead, sValue, sSkip:
		p.header(c, push)
	case sChunkSize, sChunkExt, sChunkCR, sChunkLF, sTrailer, sTrailerCR, sTrailerLine:
		p.chunked(c)
	}
}

// header reads a byte of a head's fields.
func (p *framer) header(c byte, push func(head)) {
	switch p.st {
	case sLineStart:
		switch c {
		case ' ', '\t': // a continuation of the previous field
			if p.pending != fieldOther {
				p.val = append(bytes.TrimRight(p.val, " \t"), ' ')
				p.st = sValueLead
			} else {
				p.st = sSkip
			}
			return
		}
		p.finishValue()
		switch c {
		case '\n':
			p.endHead(push)
		case '\r':
			p.st = sLineCR
		default:
			p.st, p.nameLen = sName, 0
			p.header(c, push)
		}
	case sLineCR:
		if c != '\n' {
			p.lose()
			return
		}
		p.endHead(push)
	case sName:
		switch {
		case c == ':':
			p.field = fieldOther
			if n := p.name[:p.nameLen]; string(n) == "content-length" {
				p.field = fieldCL
			} else if string(n) == "transfer-encoding" {
				p.field = fieldTE
			}
			p.st = sSkip
			if p.field != fieldOther {
				p.pending, p.val, p.st = p.field, p.val[:0], sValueLead
			}
		case c == '\n':
			p.lose() // a line without a colon: net/http refuses it
		case p.nameLen == len(p.name):
			p.st = sSkip // longer than any watched name
		case p.nameLen == 0 && lowerByte(c) != 'c' && lowerByte(c) != 't':
			p.st = sSkip // neither content-length nor transfer-encoding
		default:
			p.name[p.nameLen] = lowerByte(c)
			p.nameLen++
		}
	case sValueLead:
		if c == ' ' || c == '\t' {
			return
		}
		p.st = sValue
		p.header(c, push)
	case sValue:
		switch {
		case c == '\n':
			p.val = bytes.TrimSuffix(p.val, []byte("\r"))
			p.st = sLineStart
		case len(p.val) < maxWatchedValue:
			p.val = append(p.val, c)
		default:
			p.overflow = true
		}
	case sSkip:
		if c == '\n' {
			p.st = sLineStart
		}
	}
}

// finishValue records the watched field whose value was read, once no
// continuation line follows it.
func (p *framer) finishValue() {
	if p.pending == fieldOther {
		return
	}
	v := trimOWS(p.val)
	switch p.pending {
	case fieldCL:
		if p.clCount == 0 {
			p.clFirst = append(p.clFirst[:0], v...)
		} else if !bytes.Equal(v, p.clFirst) {
			p.clBad = true // net/http refuses differing lengths
		}
		p.clCount++
		p.clBad = p.clBad || p.overflow
	case fieldTE:
		p.teCount++
		p.teChunk = !p.overflow && equalFold(v, "chunked")
	}
	p.pending, p.overflow, p.val = fieldOther, false, p.val[:0]
}

// endHead decides the head's framing and how its body is read, as
// net/http does: Transfer-Encoding chunked from HTTP/1.1 on (anything else
// refused), else Content-Length, else no body.
func (p *framer) endHead(push func(head)) {
	var v11 bool
	switch {
	case len(p.proto) == 8 && string(p.proto[:7]) == "HTTP/1." && p.proto[7] == '0':
	case len(p.proto) == 8 && string(p.proto[:7]) == "HTTP/1." && p.proto[7] >= '1' && p.proto[7] <= '9':
		v11 = true
	default:
		p.lose()
		return
	}
	f := framingClear
	switch {
	case p.teCount > 0 && !v11:
		f = framingHTTP10TE
	case p.teCount > 0 && p.clCount > 0:
		f = framingBoth
	}
	push(head{key: p.key, f: f})
	switch {
	case v11 && p.teCount > 0:
		if p.teCount != 1 || !p.teChunk {
			p.lose()
			return
		}
		p.st, p.remaining, p.digits = sChunkSize, 0, 0
	case p.clCount > 0:
		n, err := strconv.ParseUint(string(p.clFirst), 10, 63)
		if p.clBad || err != nil || len(p.clFirst) == 0 || p.clFirst[0] == '+' {
			p.lose()
			return
		}
		p.st, p.remaining = sBody, n
		if n == 0 {
			p.st = sReqStart
		}
	default:
		p.st = sReqStart
	}
}

// chunked reads a byte of a chunked body's framing or trailer.
func (p *framer) chunked(c byte) {
	switch p.st {
	case sChunkSize:
		if d, ok := hexDigit(c); ok {
			if p.digits == maxChunkSizeLine {
				p.lose()
				return
			}
			p.remaining, p.digits = p.remaining<<4|uint64(d), p.digits+1
			return
		}
		p.st = sChunkExt
		p.chunked(c)
	case sChunkExt:
		if c != '\n' {
			return
		}
		switch {
		case p.digits == 0:
			p.lose()
		case p.remaining == 0:
			p.st = sTrailer
		default:
			p.st = sChunkData
		}
	case sChunkCR:
		if c != '\r' {
			p.lose()
			return
		}
		p.st = sChunkLF
	case sChunkLF:
		if c != '\n' {
			p.lose()
			return
		}
		p.st, p.remaining, p.digits = sChunkSize, 0, 0
	case sTrailer:
		switch c {
		case '\n':
			p.st = sReqStart
		case '\r':
			p.st = sTrailerCR
		default:
			p.st = sTrailerLine
		}
	case sTrailerCR:
		if c != '\n' {
			p.lose()
			return
		}
		p.st = sReqStart
	case sTrailerLine:
		if c == '\n' {
			p.st = sTrailer
		}
	}
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
