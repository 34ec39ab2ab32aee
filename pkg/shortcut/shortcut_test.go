package shortcut

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSwitchesTurnOffOneShortcutForGood(t *testing.T) {
	var nilSwitches *Switches
	for _, k := range Kinds {
		assert.True(t, nilSwitches.On(k), "a nil Switches has every shortcut on")
		assert.False(t, nilSwitches.TurnOff(k), "and nothing to turn off")
	}
	s := &Switches{}
	for _, k := range Kinds {
		assert.True(t, s.On(k))
	}
	assert.True(t, s.TurnOff(MapOnly))
	assert.False(t, s.TurnOff(MapOnly), "it was off already")
	assert.False(t, s.On(MapOnly))
	assert.True(t, s.On(Render), "the others stay on")
	assert.True(t, s.On(ReadSet))
	assert.False(t, s.TurnOff("unknown"))
	assert.True(t, s.On("unknown"))
}
