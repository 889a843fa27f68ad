package main

import (
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"scheduler/cmd/scheduler/internal/config"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the process logger from log.level and log.format, writing to w. Durations
// are written with their unit ("grace":"30s"), not as a bare number.
func newLogger(cfg config.LogConfig, w io.Writer) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(cfg.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	encCfg.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	switch logFormat(cfg.Format, w) {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return nil, fmt.Errorf("log.format: unknown format %q", cfg.Format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w)))), nil
}

// logFormat resolves format auto: lines for people on a terminal, JSON for a file, a pipe or a
// log collector.
func logFormat(format string, w io.Writer) string {
	if format != "auto" {
		return format
	}
	if isTerminal(w) {
		return "console"
	}
	return "json"
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
