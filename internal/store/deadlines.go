package store

// deadline is the expiry deadline of one key.
type deadline struct {
	key   string
	at    int64
	index int // position in the heap
}

// deadlineHeap is a binary min-heap of deadlines. Each entry knows its
// position, so a new deadline or a deletion costs O(log n).
type deadlineHeap []*deadline

func (h *deadlineHeap) push(d *deadline) {
	d.index = len(*h)
	*h = append(*h, d)
	h.up(d.index)
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
	removed.index = -1
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
	h[i].index = i
	h[j].index = j
}

func (h deadlineHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].at <= h[i].at {
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
		if r := child + 1; r < len(h) && h[r].at < h[child].at {
			child = r
		}
		if h[i].at <= h[child].at {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
