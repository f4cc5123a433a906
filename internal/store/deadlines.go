package store

// deadlineHeap is a binary min-heap of entries by deadline. Each entry
// knows its position, so a new deadline or a deletion costs O(log n).
type deadlineHeap []*entry

func (h *deadlineHeap) push(e *entry) {
	e.heapIndex = len(*h)
	*h = append(*h, e)
	h.up(e.heapIndex)
}

func (h *deadlineHeap) remove(i int) {
	s := *h
	last := len(s) - 1
	removed := s[i]
	if i != last {
		h.swap(i, last)
	}
	s[last] = nil
	*h = s[:last]
	removed.heapIndex = -1
	if i != last {
		h.fix(i)
	}
}

func (h deadlineHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h deadlineHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

func (h deadlineHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].expiresAt <= h[i].expiresAt {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down moves h[i] towards the leaves and reports whether it moved.
func (h deadlineHeap) down(i int) bool {
	start := i
	for {
		child := 2*i + 1
		if child >= len(h) {
			break
		}
		if r := child + 1; r < len(h) && h[r].expiresAt < h[child].expiresAt {
			child = r
		}
		if h[i].expiresAt <= h[child].expiresAt {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
