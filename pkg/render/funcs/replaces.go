package funcs

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"text/template"
)

// A guarded function replaces the function of the same name a template
// would otherwise call (Static's, from sprig): it takes the same
// arguments and returns the same first result, with an error the
// replaced one may lack. init checks it, so a sprig version that changes
// a replaced function's signature stops the program at start (a panic
// naming the function; TestEveryReplacedFunctionTakesItsArguments runs
// the init), never a template that calls it differently halfway through
// a render, as Sprig does for the functions the Set delegates to.
func init() {
	if err := replaces(static, NewSet(nil, nil).Funcs()); err != nil {
		panic(err)
	}
}

// replaces returns an error naming the first function of by (sorted by
// name) that does not take the arguments and return the first result of
// the function of the same name in replaced; names replaced does not have
// (printf, print, println: text/template's) are not compared.
func replaces(replaced, by template.FuncMap) error {
	for _, name := range slices.Sorted(maps.Keys(by)) {
		old, ok := replaced[name]
		if !ok {
			continue
		}
		o, n := reflect.TypeOf(old), reflect.TypeOf(by[name])
		same := o.NumIn() == n.NumIn() && o.IsVariadic() == n.IsVariadic() &&
			o.NumOut() >= 1 && n.NumOut() >= 1 && o.Out(0) == n.Out(0)
		for i := 0; same && i < o.NumIn(); i++ {
			same = o.In(i) == n.In(i)
		}
		if !same {
			return fmt.Errorf("render: guarded function %q is a %s, replacing sprig's %s", name, n, o)
		}
	}
	return nil
}
