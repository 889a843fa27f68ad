package holds

import (
	"testing"

	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
