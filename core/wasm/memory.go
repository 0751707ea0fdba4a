package wasm

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryBudget caps the linear memory of one instance (the guest module and the Extism
// kernel that holds inputs and outputs share the budget). wazero only reports a failed
// memory.grow to the guest, which then dies in a language-specific way; owning the
// allocator lets the host know for certain that the limit was the cause.
type memoryBudget struct {
	limit uint64
	used  atomic.Uint64
	// hit is set when a grow was refused; Module.Call turns the failure into KindMemoryLimit.
	hit atomic.Bool
}

func newMemoryBudget(limit uint64) *memoryBudget { return &memoryBudget{limit: limit} }

// Allocate implements experimental.MemoryAllocator.
func (b *memoryBudget) Allocate(capacity, _ uint64) experimental.LinearMemory {
	return &budgetedMemory{budget: b, buf: make([]byte, 0, min(capacity, b.limit))}
}

// Bytes is the memory currently held by the instance.
func (b *memoryBudget) Bytes() uint64 { return b.used.Load() }

type budgetedMemory struct {
	budget      *memoryBudget
	buf         []byte
	initialized bool
}

// Reallocate grows the memory to size bytes, or returns nil when that would take the
// instance past its budget. The first call (the module's declared minimum) must not
// return nil, since wazero cannot fail instantiation there; exceeding the budget at that
// point is recorded and checked by the host right after instantiation.
func (m *budgetedMemory) Reallocate(size uint64) []byte {
	cur := uint64(len(m.buf))
	if size <= cur {
		return m.buf[:size]
	}
	grow := size - cur
	first := !m.initialized
	m.initialized = true
	if m.budget.used.Add(grow) > m.budget.limit {
		m.budget.hit.Store(true)
		if !first {
			m.budget.used.Add(-grow)
			return nil
		}
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		clear(m.buf[cur:])
		return m.buf
	}
	// Amortised growth as append does, but never reserve beyond the budget.
	newCap := max(size, min(uint64(cap(m.buf))*2, m.budget.limit))
	nb := make([]byte, size, newCap)
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *budgetedMemory) Free() {
	m.budget.used.Add(-uint64(len(m.buf)))
	m.buf = nil
}
