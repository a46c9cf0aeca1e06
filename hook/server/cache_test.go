package server

import (
	"crypto/sha256"
	"testing"
)

func TestAnswerCache(t *testing.T) {
	var c answerCache
	who := parentID{Name: "a", UID: "u", Generation: 2}
	k1 := sha256.Sum256([]byte("one"))
	if c.get(k1) != nil {
		t.Fatal("empty cache hit")
	}
	c.put(k1, who, []byte(`{"answer":1}`))
	e := c.get(k1)
	if e == nil || string(e.answer) != `{"answer":1}` || e.who != who {
		t.Fatalf("get after put = %+v", e)
	}
	// A key in the same slot replaces the entry; the old key then misses
	// rather than returning the other request's answer.
	k2 := k1
	k2[31] ^= 0xff
	c.put(k2, who, []byte(`{"answer":2}`))
	if e := c.get(k1); e != nil {
		t.Fatalf("k1 returned %s after k2 took its slot", e.answer)
	}
	if e := c.get(k2); e == nil || string(e.answer) != `{"answer":2}` {
		t.Fatalf("k2 = %+v", e)
	}
}
