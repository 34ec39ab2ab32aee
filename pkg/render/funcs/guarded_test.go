package funcs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAWrappedFunctionOfAnotherSignatureStopsTheProgram: the sprig
// functions the guarded and owning functions wrap are looked up once, at
// init, as the type the wrapper calls; a sprig version that changed one
// would stop the program at start (a panic naming the function), never
// leave the unguarded function in place or fail a render halfway.
func TestAWrappedFunctionOfAnotherSignatureStopsTheProgram(t *testing.T) {
	assert.PanicsWithValue(t, `render: sprig function "dict" is a func(...interface {}) map[string]interface {}`, func() {
		Sprig[func(map[string]any) map[string]any]("dict")
	})
	assert.NotNil(t, Sprig[func(...any) map[string]any]("dict"))
}

// TestFormatBound: what printf makes never exceeds the bound printf checks
// before formatting.
func TestFormatBound(t *testing.T) {
	for _, tc := range []struct {
		format string
		args   []any
	}{
		{"", nil}, {"abc", nil}, {"%d", []any{-123456789}}, {"%5d", []any{1}}, {"%-10.3f", []any{3.14159}},
		{"%*d", []any{1000000, 1}}, {"%.*f", []any{1000000, 1.5}}, {"%99999999d", []any{1}},
		{"%[2]5d %[1]q", []any{"a\x00\n", 7}}, {"%%", nil}, {"x%", nil}, {"%x", []any{"\xff\xfe"}},
		{"%q", []any{"\x00\x01\x02"}}, {"%v", []any{[]any{1, "a"}}}, {"%+v", []any{map[string]any{"k": "v"}}},
		{"%010.5d|%-+#8x", []any{42, 255}}, {"%d", nil}, {"%s", []any{1, 2, 3}},
	} {
		out := fmt.Sprintf(tc.format, tc.args...)
		assert.LessOrEqual(t, int64(len(out)), formatBound(tc.format)+argsBound(tc.args), "%q %v", tc.format, tc.args)
	}
}

// TestEveryReplacedFunctionTakesItsArguments: each guarded function takes
// the arguments of the function it replaces and returns its result (the
// check init runs), and a replaced function whose signature changed is
// named.
func TestEveryReplacedFunctionTakesItsArguments(t *testing.T) {
	guarded := NewSet(unmetered{}, nil).Funcs()
	assert.NoError(t, replaces(static, guarded))
	for name, changed := range map[string]any{
		"repeat":    func(string, int) string { return "" },
		"splitList": func(string, string) []any { return nil },
		"until":     func(...int) []int { return nil },
	} {
		assert.EqualError(t, replaces(map[string]any{name: changed}, guarded),
			fmt.Sprintf("render: guarded function %q is a %s, replacing sprig's %T", name, reflect.TypeOf(guarded[name]), changed))
	}
}

// TestPrintfOfAStringAndANewlineIsFmts: printf "%s\n" of one string,
// made in one copy (or taken from the render, SetJoined, when it knows
// it), is fmt's; join takes its text from the render only when it knows
// it.
func TestPrintfOfAStringAndANewlineIsFmts(t *testing.T) {
	s := NewSet(unmetered{}, nil)
	for _, str := range []string{"", "a", "%", "%s", "\x00", "ünï\n", "a\nb"} {
		got, err := s.printf("%s\n", str)
		assert.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("%s\n", str), got, "%q", str)
	}
	known := []any{"a", "b"}
	s.SetJoined(func(sep string, l any) (string, bool) {
		if v, ok := l.([]any); ok && len(v) == len(known) && &v[0] == &known[0] {
			return "known", true
		}
		return "", false
	}, func(str string) (string, bool) { return str + "\n", str == "known" })
	for _, tc := range []struct {
		list any
		want string
	}{{known, "known"}, {[]any{"a", "b"}, "a,b"}, {known[:1], "a"}} {
		got, err := s.join(",", tc.list)
		assert.NoError(t, err)
		assert.Equal(t, tc.want, got)
		got, err = s.printf("%s\n", got)
		assert.NoError(t, err)
		assert.Equal(t, tc.want+"\n", got)
	}
}

// TestConcatOfOneListAndEmptyOnesIsThatList: concat gives sprig's
// elements, and of one []any with elements and empty lists that very list
// (no copy); anything else is sprig's (a copy, or its panic, which
// text/template makes an error).
func TestConcatOfOneListAndEmptyOnesIsThatList(t *testing.T) {
	s := NewSet(unmetered{}, nil)
	l := []any{"a", nil, 1}
	for _, tc := range []struct {
		name  string
		lists []any
		same  bool
	}{
		{"one list", []any{l}, true},
		{"with empty ones", []any{[]any{}, l, []string{}, [0]int{}, []any(nil)}, true},
		{"two lists", []any{l, []any{"b"}}, false},
		{"the same list twice", []any{l, l}, false},
		{"a list of strings", []any{[]string{"a"}, []any{}}, false},
		{"nothing", []any{[]any{}}, false},
		{"nil", []any{l, nil}, false},
		{"not a list", []any{l, "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want any
			var err error
			gotPanic := func() (p any) {
				defer func() { p = recover() }()
				got, err = s.concat(tc.lists...)
				return nil
			}()
			wantPanic := func() (p any) {
				defer func() { p = recover() }()
				want = sprigConcat(tc.lists...)
				return nil
			}()
			assert.Equal(t, wantPanic, gotPanic, "sprig's panic (text/template's error)")
			if wantPanic != nil {
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, want, got)
			g, _ := got.([]any)
			assert.Equal(t, tc.same, len(g) > 0 && &g[0] == &l[0], "that very list")
		})
	}
}

// fitsLog is a Meter that notes the size of every Fits asked.
type fitsLog struct {
	unmetered
	asked []int64
}

func (m *fitsLog) Fits(_ string, n int64) error { m.asked = append(m.asked, n); return nil }

// TestJoinOfAKnownTextChecksTheSizeItsScanChecks: join of a list whose
// text the render knows (SetJoined: strings only) asks the budget whether
// the very size fits that it asks when it scans the list (the text's
// length less its separators is the strings' size), for empty strings,
// one value, separators of any length; and it answers the known text.
func TestJoinOfAKnownTextChecksTheSizeItsScanChecks(t *testing.T) {
	for _, tc := range []struct {
		sep  string
		list []any
	}{
		{",", []any{"a", "bb", "ccc"}}, {"\n", []any{"only"}}, {"", []any{"a", "b"}}, {" - ", []any{"", "", ""}},
		{"\n", []any{"", "x"}}, {"::::", []any{"ünï", "a\nb", ""}},
	} {
		scan := &fitsLog{}
		_, err := NewSet(scan, nil).join(tc.sep, tc.list)
		assert.NoError(t, err)
		known := &fitsLog{}
		s, calls := NewSet(known, nil), 0
		s.SetJoined(func(sep string, l any) (string, bool) {
			calls++
			strs := make([]string, 0, len(tc.list))
			for _, v := range l.([]any) {
				strs = append(strs, v.(string))
			}
			return strings.Join(strs, sep), true
		}, nil)
		got, err := s.join(tc.sep, tc.list)
		assert.NoError(t, err)
		assert.Equal(t, sprigJoin(tc.sep, tc.list), got)
		assert.Equal(t, 1, calls, "the known text")
		assert.Equal(t, scan.asked, known.asked, "%q %q", tc.sep, tc.list)
	}
}
