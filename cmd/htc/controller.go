package main

import (
	"context"
	"io"
)

func runController(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usagef("the controller is not implemented yet")
}
