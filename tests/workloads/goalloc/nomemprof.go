// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build nomemprof

// Without runtime.MemProfile linked the runtime samples nothing
// (runtime.MemProfileRate is 0): goalloc-nomemprof, the program bpfprof
// --alloc must warn about instead of printing an empty profile.
package main

import (
	"fmt"
	"os"
)

func printMemProfile() {
	fmt.Fprintln(os.Stderr, "goalloc: built without runtime.MemProfile (-tags nomemprof)")
}
