package bootstrap

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// UniqueIDBytes is the size of a unique id, NCCL's NCCL_UNIQUE_ID_BYTES.
const UniqueIDBytes = 128

// A UniqueID names one job to its processes, as ncclUniqueId does: the
// bootstrap root's address and the job's token, which a peer must present
// to join. Rank 0 makes it (NewUniqueID) and hands it to the others out of
// band, or every process derives the same one from its launcher (IDFor).
//
// Layout: "gccl" | version 1 | address length | address (up to 90 bytes) |
// token (32 bytes) | zeros.
type UniqueID [UniqueIDBytes]byte

const (
	idMagic     = "gccl"
	idVersion   = 1
	tokenBytes  = 32
	maxAddrLen  = UniqueIDBytes - len(idMagic) - 2 - tokenBytes
	tokenOffset = UniqueIDBytes - tokenBytes
)

// ErrBadUniqueID is a value that is not a unique id of this version.
var ErrBadUniqueID = errors.New("bootstrap: not a gccl unique id")

// NewUniqueID makes a unique id for a root at addr (host:port) with a
// random token.
func NewUniqueID(addr string) (UniqueID, error) {
	var token [tokenBytes]byte
	if _, err := rand.Read(token[:]); err != nil {
		return UniqueID{}, fmt.Errorf("bootstrap: token: %w", err)
	}
	return makeID(addr, token)
}

// IDFor is the unique id every process of a launched job derives alike:
// the launch's root, and a token from GCCL_JOB_TOKEN when set (jobToken),
// else from the launcher's job id. A job id is no secret from the host's
// other users: set GCCL_JOB_TOKEN where that matters.
func IDFor(l Launch, jobToken string) (UniqueID, error) {
	if l.Root == "" {
		return UniqueID{}, fmt.Errorf("bootstrap: no root address to put in a unique id (a process on its own needs none)")
	}
	seed := jobToken
	if seed == "" {
		if l.JobID == "" {
			return UniqueID{}, fmt.Errorf("bootstrap: no job token: set GCCL_JOB_TOKEN (the same value in every process of the job)")
		}
		seed = "job:" + l.JobID
	}
	return makeID(l.Root, sha256.Sum256([]byte("gccl job token\x00"+seed)))
}

func makeID(addr string, token [tokenBytes]byte) (UniqueID, error) {
	var id UniqueID
	if err := checkHostPort(addr); err != nil {
		return id, fmt.Errorf("bootstrap: root address %q: %v", addr, err)
	}
	if len(addr) > maxAddrLen {
		return id, fmt.Errorf("bootstrap: root address %q is %d bytes; a unique id holds %d", addr, len(addr), maxAddrLen)
	}
	copy(id[:], idMagic)
	id[len(idMagic)] = idVersion
	id[len(idMagic)+1] = byte(len(addr))
	copy(id[len(idMagic)+2:], addr)
	copy(id[tokenOffset:], token[:])
	return id, nil
}

// Root is the root's address, host:port.
func (id UniqueID) Root() (string, error) {
	if string(id[:len(idMagic)]) != idMagic || id[len(idMagic)] != idVersion {
		return "", ErrBadUniqueID
	}
	n := int(id[len(idMagic)+1])
	if n == 0 || n > maxAddrLen {
		return "", fmt.Errorf("%w: address length %d", ErrBadUniqueID, n)
	}
	addr := string(id[len(idMagic)+2:][:n])
	if err := checkHostPort(addr); err != nil {
		return "", fmt.Errorf("%w: address %q: %v", ErrBadUniqueID, addr, err)
	}
	return addr, nil
}

// Token is the job's token, which peers present to the root.
func (id UniqueID) Token() [tokenBytes]byte {
	var t [tokenBytes]byte
	copy(t[:], id[tokenOffset:])
	return t
}
