package schedule

import "time"

// Jitter returns the delay, in [0, window), after which job's slot fires. It spreads jobs that share
// a slot (the 02:00 herd) across the window while every replica, whatever its version or platform,
// computes the same delay. It returns 0 when window <= 0.
//
// The delay is fixed by this definition and must not change: a 64-bit FNV-1a hash of the job name,
// a zero byte, the slot's Unix seconds (8 bytes, big-endian, two's complement) and its nanoseconds
// (4 bytes, big-endian), passed through the SplitMix64 finalizer, modulo the window in nanoseconds.
func Jitter(job string, slot time.Time, window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(job); i++ {
		h ^= uint64(job[i])
		h *= prime64
	}
	h *= prime64 // the zero byte: h ^= 0 is a no-op
	sec := uint64(slot.Unix())
	for shift := 56; shift >= 0; shift -= 8 {
		h ^= (sec >> shift) & 0xff
		h *= prime64
	}
	nsec := uint64(slot.Nanosecond())
	for shift := 24; shift >= 0; shift -= 8 {
		h ^= (nsec >> shift) & 0xff
		h *= prime64
	}
	// FNV's low bits mix poorly; the finalizer spreads every input bit over the result.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return time.Duration(h % uint64(window))
}
