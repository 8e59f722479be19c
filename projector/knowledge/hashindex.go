package knowledge

import "slices"

// hashIndex lists a pool state's slots by bigram hash. In free text most
// bigrams are in one entry only, so most hashes of a long pool's history
// are held by one slot: those are kept as a slot number in one map (a
// dozen bytes each), the others as lists.
//
// INVARIANT: a hash is in at most one of one and many, and in many only
// with two slots or more; a hash's slots are distinct.
type hashIndex struct {
	one  map[uint64]int32
	many map[uint64][]int32
}

func newHashIndex() hashIndex {
	return hashIndex{one: map[uint64]int32{}, many: map[uint64][]int32{}}
}

// add lists slot under h.
func (x hashIndex) add(h uint64, slot int32) {
	if list, ok := x.many[h]; ok {
		x.many[h] = append(list, slot)
		return
	}
	if other, ok := x.one[h]; ok {
		delete(x.one, h)
		x.many[h] = []int32{other, slot}
		return
	}
	x.one[h] = slot
}

// drop unlists slot from h.
func (x hashIndex) drop(h uint64, slot int32) {
	if other, ok := x.one[h]; ok {
		if other == slot {
			delete(x.one, h)
		}
		return
	}
	list := x.many[h]
	if j := slices.Index(list, slot); j >= 0 {
		list = slices.Delete(list, j, j+1)
	}
	switch len(list) {
	case 0:
		delete(x.many, h)
	case 1:
		delete(x.many, h)
		x.one[h] = list[0]
	default:
		x.many[h] = list
	}
}

// slots returns the slots under h; a single one is returned in single
// (of length 1), which the result then is.
func (x hashIndex) slots(h uint64, single []int32) []int32 {
	if s, ok := x.one[h]; ok {
		single[0] = s
		return single
	}
	return x.many[h]
}
