package budget

import "bytes"

// Tracker is told where the output a Writer writes goes (the render's
// source map: which object wrote which line).
type Tracker interface {
	// Wrote is called before off bytes of the current output were
	// written and more follow.
	Wrote(off int)
}

// Writer is the writer every template of a render writes to. Each Write
// first checks the render's done flag, so a template stops as soon as it
// produces output after its context ended (text/template aborts on a
// write error), then charges the bytes: to the bundle limit for an output,
// to the scratch budget for the text a function captures.
type Writer struct {
	bytes.Buffer
	b       *Budget
	scratch bool    // a capture, not bundle output
	t       Tracker // the render's source map (nil: none)
}

// Output returns a writer of bundle output, charged to b's bundle limit,
// that tells t (if not nil) of its writes.
func (b *Budget) Output(t Tracker) Writer { return Writer{b: b, t: t} }

// Capture returns a writer of the text a function captures (include,
// addFile, a fragment), charged to b's scratch budget as include's.
func (b *Budget) Capture() Writer { return Writer{b: b, scratch: true} }

// Write appends p unless the render was interrupted or p exceeds the budget.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.admit(len(p), true); err != nil || len(p) == 0 {
		return 0, err
	}
	return w.Buffer.Write(p)
}

// WriteString is Write of a string (the Buffer's own would skip the
// budget and the tracker).
func (w *Writer) WriteString(s string) (int, error) {
	if err := w.admit(len(s), true); err != nil || len(s) == 0 {
		return 0, err
	}
	return w.Buffer.WriteString(s)
}

// WriteUntracked is WriteString without telling the tracker, which is
// told of the write otherwise (a fragment's record).
func (w *Writer) WriteUntracked(s string) error {
	if err := w.admit(len(s), false); err != nil || len(s) == 0 {
		return err
	}
	_, err := w.Buffer.WriteString(s)
	return err
}

// admit checks the done flag, charges n bytes about to be written and,
// with track, tells the tracker of the write.
func (w *Writer) admit(n int, track bool) error {
	if err := w.b.Interrupted(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	var err error
	if w.scratch {
		err = w.b.Charge("include", int64(n))
	} else {
		err = w.b.ChargeBundle("", int64(n))
	}
	if err != nil {
		return err
	}
	if track && w.t != nil && !w.scratch {
		w.t.Wrote(w.Len())
	}
	return nil
}
