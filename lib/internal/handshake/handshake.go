// Package handshake is what the bootstrap root and the network transport's
// listener share to admit a connection without ever sending the job's
// token: a mutual challenge-response over fresh nonces, and a bounded,
// rate-limited account of the connections they refuse.
//
// Both ends send a nonce; each proves it holds the token with
// HMAC-SHA256(key = token, label | the dialler's nonce | the listener's
// nonce | context). The label names the protocol and the role, so a proof
// made for one role or protocol is no proof for another; the listener's
// fresh nonce makes a recorded proof useless on any later connection.
// A process squatting the listener's port sees the dialler's nonce and
// nothing made from the token: the dialler checks the listener's proof
// before it sends its own.
package handshake

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"time"
)

// NonceBytes is the size of a nonce; ProofBytes of a proof.
const (
	NonceBytes = 32
	ProofBytes = sha256.Size
)

// Nonce is a fresh random nonce.
func Nonce() ([NonceBytes]byte, error) {
	var n [NonceBytes]byte
	if _, err := rand.Read(n[:]); err != nil {
		return n, fmt.Errorf("a random nonce: %w", err)
	}
	return n, nil
}

// Proof is HMAC-SHA256 of label (with a terminating zero byte) and parts,
// each part preceded by its length, keyed by token: unambiguous however the
// parts are cut.
func Proof(token []byte, label string, parts ...[]byte) [ProofBytes]byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte(label))
	m.Write([]byte{0})
	for _, p := range parts {
		n := len(p)
		m.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		m.Write(p)
	}
	var out [ProofBytes]byte
	m.Sum(out[:0])
	return out
}

// Verify reports, in constant time, whether got is Proof(token, label,
// parts...).
func Verify(got []byte, token []byte, label string, parts ...[]byte) bool {
	want := Proof(token, label, parts...)
	return hmac.Equal(got, want[:])
}

// Accept is ln.Accept, riding out the errors a flood of connections can
// cause (too many open files: EMFILE, ENFILE; ECONNABORTED) with a pause
// that grows to a second, rather than stop accepting for good; it fails
// once ln is closed. onErr, if not nil, hears of each error ridden out.
func Accept(ln net.Listener, onErr func(error)) (net.Conn, error) {
	pause := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err == nil || errors.Is(err, net.ErrClosed) {
			return c, err
		}
		if onErr != nil {
			onErr(err)
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Second)
	}
}
