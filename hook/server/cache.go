package server

import (
	"crypto/sha256"
	"encoding/binary"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/labhub/teamspace/hook/teamspace"
)

// answerCache remembers the answers of the pure hooks (sync, customize) by
// the SHA-256 of the request body: the engine's resyncs send byte-identical
// requests, and the answer to the same bytes is always the same bytes. It is
// direct-mapped and lock-free, so its size is fixed (answerCacheSlots
// answers of ~1.5 KiB) and a collision only costs a recomputation.
type answerCache struct {
	slots [answerCacheSlots]atomic.Pointer[cacheEntry]
	// hits counts the answers served from the cache (a metric), which is
	// how an operator, and a test, sees that resyncs skip the computation.
	hits prometheus.Counter
}

// newAnswerCache is the cache of one hook, counting its hits.
func (h *Handler) newAnswerCache(hook string) *answerCache {
	return &answerCache{hits: h.metrics.cacheHits.WithLabelValues(hook)}
}

const answerCacheSlots = 512

type cacheEntry struct {
	key    [sha256.Size]byte
	answer []byte
	who    parentID
}

func (c *answerCache) slot(key [sha256.Size]byte) *atomic.Pointer[cacheEntry] {
	return &c.slots[binary.LittleEndian.Uint64(key[:8])%answerCacheSlots]
}

func (c *answerCache) get(key [sha256.Size]byte) *cacheEntry {
	if e := c.slot(key).Load(); e != nil && e.key == key {
		return e
	}
	return nil
}

func (c *answerCache) put(key [sha256.Size]byte, who parentID, answer []byte) {
	c.slot(key).Store(&cacheEntry{key: key, answer: answer, who: who})
}

// parentID is what a log line says of the TeamSpace a request was about;
// a cached answer keeps it so that a cache hit logs the same line.
type parentID struct {
	Name       string
	UID        string
	Generation int64
}

// identify is the parentID of a decoded request, nil without a parent.
func identify(req *teamspace.Request) *parentID {
	if req == nil || req.Parent == nil {
		return nil
	}
	m := req.Parent.Metadata
	return &parentID{Name: m.Name, UID: string(m.UID), Generation: m.Generation}
}
