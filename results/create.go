package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Create creates a new output file for writing. It never destroys data: when
// path already exists it returns an error wrapping ErrExists that says so.
// The check and the creation are one atomic step (O_EXCL).
func Create(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s already exists; refusing to overwrite it: %w", path, ErrExists)
	}
	return f, err
}

// CreateForce creates path for writing, truncating an existing file. Callers
// use it only when the user asked for that explicitly (a --force flag).
func CreateForce(path string) (*os.File, error) {
	return os.Create(path)
}
