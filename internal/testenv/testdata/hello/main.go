// Command hello prints a greeting; the build helper's test builds and runs it.
package main

import "fmt"

func main() { fmt.Println("hello from a built binary") }
