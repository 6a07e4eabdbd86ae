package autotls

import (
	"encoding/pem"
	"sync"
)

// errHolder holds an error for concurrent readers.
type errHolder struct {
	mu  sync.Mutex
	err error
}

func (h *errHolder) set(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
}

func (h *errHolder) get() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// nextPEM returns the bytes of the first PEM block of type typ in data
// and what follows it; nil when there is none.
func nextPEM(data []byte, typ string) (block, rest []byte) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, data
		}
		if b.Type == typ {
			return b.Bytes, data
		}
	}
}
