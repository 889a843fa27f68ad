package main

import (
	"fmt"
	"io"

	"scheduler/cmd/scheduler/internal/config"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the process logger from log.level and log.format, writing to w.
func newLogger(cfg config.LogConfig, w io.Writer) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(cfg.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	var enc zapcore.Encoder
	switch cfg.Format {
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
