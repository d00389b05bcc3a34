package transfer

import (
	"errors"
	"testing"
)

func TestErrorCodes(t *testing.T) {
	e := &Error{Code: CodeExists, Text: "f", Remote: true}
	if !errors.Is(e, ErrExists) || errors.Is(e, ErrBusy) {
		t.Error("Is by code")
	}
	if e.Error() != "peer: file exists: f" {
		t.Errorf("Error() = %q", e.Error())
	}
	if Code(999).String() != "error code 999" {
		t.Error(Code(999).String())
	}
}
