// root_handshake.go: the root's side of a connection's handshake:
// authentication, the hello, and why a connection was refused.

package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gccl/gccl/lib/internal/handshake"
)

// Reasons the root refuses a connection before it joins (its log counts
// by them).
const (
	reasonAuth      = "failed authentication"
	reasonClosed    = "closed before authenticating"
	reasonNotGCCL   = "not a gccl bootstrap connection"
	reasonVersion   = "a gccl of another version"
	reasonBadHello  = "a malformed hello"
	reasonNoNonce   = "no nonce to challenge it with"
	reasonNoHelloIn = "no hello within %v"
)

// handshake authenticates c and reads its hello, all within the hello
// deadline; it counts and logs a refusal (false) otherwise.
func (r *Root) handshake(c net.Conn) (hello, bool) {
	within := min(helloDeadline, r.opt.Timeout)
	_ = c.SetDeadline(time.Now().Add(within))
	// Held among the unauthenticated until its hello is in (the next
	// frame): Close then never waits for a deadline.
	defer r.unauth.Leave(c)
	reason, detail := r.authenticate(c, within)
	if reason != "" {
		r.refused(c, reason, detail)
		return hello{}, false
	}
	typ, p, err := readFrame(c, maxFrame)
	var h hello
	switch {
	case err != nil:
		reason, detail = readFailure(c, err, within)
	case typ != frameHello:
		reason, detail = reasonBadHello, fmt.Sprintf("a message of type %d", typ)
	default:
		if h, err = decodeHello(p); err != nil {
			reason, detail = reasonBadHello, err.Error()
		}
	}
	if reason != "" {
		r.refused(c, reason, detail)
		return h, false
	}
	_ = c.SetDeadline(time.Time{})
	return h, true
}

// authenticate runs the root's side of the handshake (wire.go): the
// process's open, the root's challenge with its proof, the process's
// proof. It returns why it refuses the connection ("" for not).
func (r *Root) authenticate(c net.Conn, within time.Duration) (reason, detail string) {
	typ, p, err := readFrame(c, preAuthFrame)
	if err == nil && typ != frameOpen {
		err = fmt.Errorf("a first message of type %d", typ)
	}
	var o open
	if err == nil {
		o, err = decodeOpen(p)
	}
	if err != nil {
		return readFailure(c, err, within)
	}
	rn, err := handshake.Nonce()
	if err != nil {
		return reasonNoNonce, err.Error()
	}
	if err := writeFrame(c, frameChallenge, challenge{nonce: rn, proof: rootProof(r.token, o.nonce, rn)}.encode()); err != nil {
		return readFailure(c, err, within)
	}
	typ, p, err = readFrame(c, preAuthFrame)
	switch {
	case err != nil:
		return readFailure(c, err, within)
	case typ == frameRefuse: // it found the root's proof wrong
		return reasonAuth, "it holds another job's token"
	case typ != frameProof:
		return reasonNotGCCL, fmt.Sprintf("a message of type %d where its proof belongs", typ)
	case !handshake.Verify(p, r.token[:], procLabel, o.nonce[:], rn[:]):
		return reasonAuth, "its proof does not match this job's token"
	}
	return "", ""
}

// readFailure says why reading or writing a connection's handshake
// failed with err, as what happened: the deadline passed, the peer hung
// up, it sent what no gccl process of this version sends.
func readFailure(c net.Conn, err error, within time.Duration) (reason, detail string) {
	var ne net.Error
	var size *frameSizeError
	var other errOtherVersion
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf(reasonNoHelloIn, within), ""
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return reasonClosed, ""
	case errors.As(err, &other):
		return reasonVersion, other.Error()
	case errors.As(err, &size):
		// A gccl-bs2 hello (the token, ranks and blob) can outgrow an open:
		// its magic tells it apart from noise.
		var m [len(wireMagic)]byte
		if size.typ == frameOpen && size.n > uint32(len(m)) {
			if _, err := io.ReadFull(c, m[:]); err == nil {
				if _, err := checkMagic(m[:]); errors.As(err, &other) {
					return reasonVersion, other.Error()
				}
			}
		}
		return reasonNotGCCL, fmt.Sprintf("a frame of %d bytes where at most %d are taken before authentication", size.n, size.limit)
	case errors.As(err, new(*net.OpError)):
		return reasonClosed, err.Error()
	default:
		return reasonNotGCCL, err.Error()
	}
}
