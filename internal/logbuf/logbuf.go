// Package logbuf batches a process's log lines into few writes: lines are
// appended to a buffer that a background goroutine writes out every
// interval, so a busy server makes one write system call per interval
// instead of one per request (nginx's access_log buffer= and flush=).
//
// What can be lost: the lines of the last interval if the process is killed
// (SIGKILL, a crash of the runtime). Close, called on every orderly exit,
// writes everything out.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Config tunes a Writer.
type Config struct {
	// Interval is the longest a line waits in the buffer; zero means 100ms.
	Interval time.Duration
	// Size is the buffer's capacity: a line that would overflow it makes the
	// writer flush first, so memory stays bounded whatever the log rate;
	// zero means 64 KiB.
	Size int
}

// Writer is an io.Writer that batches its writes; safe for concurrent use.
// Each Write is kept whole, so lines from concurrent loggers never interleave.
type Writer struct {
	out  io.Writer
	size int

	mu  sync.Mutex // guards buf and closed
	buf []byte
	// closed is set by Close; later writes go straight out.
	closed bool

	outMu sync.Mutex // serializes writes to out, in the order buffers were taken
	spare []byte     // guarded by outMu: the other half of the double buffer

	stop chan struct{}
	done chan struct{}
}

// New returns a Writer in front of out and starts its flusher; Close stops it.
func New(out io.Writer, cfg Config) *Writer {
	if cfg.Interval <= 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	if cfg.Size <= 0 {
		cfg.Size = 64 << 10
	}
	w := &Writer{out: out, size: cfg.Size, buf: make([]byte, 0, cfg.Size), spare: make([]byte, 0, cfg.Size),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.flushEvery(cfg.Interval)
	return w
}

func (w *Writer) flushEvery(d time.Duration) {
	defer close(w.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.Flush()
		}
	}
}

// WritesWhole tells writers in front of w (jsonlog) that each Write is kept
// whole under concurrent use, so they need no lock of their own.
func (w *Writer) WritesWhole() {}

// Write buffers p; it writes out first when p would not fit, and writes p
// directly when it is larger than the whole buffer or the writer is closed.
func (w *Writer) Write(p []byte) (int, error) {
	if w.buffered(p) {
		return len(p), nil
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if w.buffered(p) {
		return len(p), nil
	}
	// Too large for the buffer (or closed): out directly, after what was
	// buffered before it.
	w.outMu.Lock()
	defer w.outMu.Unlock()
	if err := w.writeBuffered(); err != nil {
		return 0, err
	}
	return w.out.Write(p)
}

// buffered appends p to the buffer if it fits and the writer is open.
func (w *Writer) buffered(p []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.buf)+len(p) > w.size {
		return false
	}
	w.buf = append(w.buf, p...)
	return true
}

// Flush writes out what is buffered. Writers are held only while the
// buffers are swapped, not while out is written.
func (w *Writer) Flush() error {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	return w.writeBuffered()
}

// writeBuffered swaps the buffers and writes the full one; outMu is held.
func (w *Writer) writeBuffered() error {
	w.mu.Lock()
	full := w.buf
	w.buf = w.spare[:0]
	w.mu.Unlock()
	w.spare = full
	if len(full) == 0 {
		return nil
	}
	_, err := w.out.Write(full)
	return err
}

// Close stops the flusher and writes out what is buffered; later writes go
// straight to out, so a line logged after Close is never lost.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return w.Flush()
}
