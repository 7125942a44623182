package registry

import (
	"hash/fnv"
	"weak"

	"cloud2mqtt/internal/capability"
)

// sceneLists lets lights of one model share one copy of their equal scene
// lists, which as copies were most of a large household's heap. It holds
// them weakly, so a list no device uses is collected.
type sceneLists struct {
	byNames map[uint64][]weak.Pointer[sceneList]
	sweepAt int // sweep dead entries when the map grows past this
}

// sceneList is one shared, read-only scene list; a device holds it for as
// long as it uses the options.
type sceneList struct {
	opts []capability.Option
}

// options returns the list's options; nil for no list.
func (l *sceneList) options() []capability.Option {
	if l == nil {
		return nil
	}
	return l.opts
}

// intern returns a shared list equal to opts, or a new one holding opts;
// nil for an empty list.
func (s *sceneLists) intern(opts []capability.Option) *sceneList {
	if len(opts) == 0 {
		return nil
	}
	if s.byNames == nil {
		s.byNames = make(map[uint64][]weak.Pointer[sceneList])
	}
	h := hashNames(opts)
	var found *sceneList
	live := s.byNames[h][:0]
	for _, w := range s.byNames[h] {
		l := w.Value()
		if l == nil {
			continue // no device holds it any more
		}
		live = append(live, w)
		if found == nil && optionsEqual(l.opts, opts) {
			found = l
		}
	}
	if found == nil {
		found = &sceneList{opts: opts}
		live = append(live, weak.Make(found))
	}
	s.byNames[h] = live
	if len(s.byNames) > s.sweepAt {
		s.sweep()
	}
	return found
}

// sweep forgets the lists no device holds.
func (s *sceneLists) sweep() {
	for h, ws := range s.byNames {
		live := ws[:0]
		for _, w := range ws {
			if w.Value() != nil {
				live = append(live, w)
			}
		}
		if len(live) == 0 {
			delete(s.byNames, h)
		} else {
			s.byNames[h] = live
		}
	}
	s.sweepAt = 2*len(s.byNames) + 64
}

// hashNames hashes the options' names: lists of other models differ in
// them; lists with the same names are told apart by comparing them whole.
func hashNames(opts []capability.Option) uint64 {
	h := fnv.New64a()
	for _, o := range opts {
		_, _ = h.Write([]byte(o.Name))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}
