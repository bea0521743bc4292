package server

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine serve starts is joined before Run returns (the front
// door's drain among them): a test that ends with one left fails here.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
