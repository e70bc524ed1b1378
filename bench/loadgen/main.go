// loadgen: an open-loop, fixed-rate HTTP/1.1 load generator for the
// benchmarks (bench/lib/loadgen.ts builds and runs it).
//
// Why not a Node generator: Node's timers tick in whole milliseconds, so a
// Node loop keeps a 1 ms schedule only by spinning on setImmediate, which
// burns a whole core of a two-core machine; the servers under test then share
// the other one and every hop pays for it (it measured the bare fake upstream
// at 1.2 ms p50). Go's time.Sleep also wakes on a millisecond grid here (0.55
// ms late at p50), so the sender sleeps in nanosleep(2) on a locked thread
// with a 1 µs timer slack: ~0.05 ms late at p50, a few percent of a core.
//
// Requests are scheduled at start + i/rate and latency is measured from the
// scheduled time (no coordinated omission: a stalled server is not hidden by
// the generator waiting for it). With -ttfb the latency ends at the first
// body byte instead of the last. With -warmup, requests are first sent at
// the same rate for that long and not recorded: connections get opened and
// the runtime settles, so each run measures the steady state (without it
// the first ~100 ms of every run — TCP handshakes, a cold runtime — showed
// up as a cluster of 2–5 ms requests). The result is one JSON object on stdout:
// {"sent","ok","errors","first_error","elapsed_s","latencies_us":[...]}.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

type result struct {
	Sent        int     `json:"sent"`
	OK          int     `json:"ok"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	ElapsedS    float64 `json:"elapsed_s"`
	LatenciesUs []int64 `json:"latencies_us"`
}

func main() {
	url := flag.String("url", "", "target URL")
	method := flag.String("method", "POST", "HTTP method")
	body := flag.String("body", "", "request body")
	rate := flag.Float64("rate", 1000, "requests per second")
	duration := flag.Duration("duration", 5*time.Second, "how long to send (and record)")
	warmup := flag.Duration("warmup", 0, "how long to send first without recording")
	connections := flag.Int("connections", 64, "keep-alive connections at most")
	ttfb := flag.Bool("ttfb", false, "measure to the first body byte")
	procs := flag.Int("procs", 2, "GOMAXPROCS")
	var headers headerFlags
	flag.Var(&headers, "header", "a request header, 'name: value' (repeatable)")
	flag.Parse()
	if *url == "" || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "loadgen: -url and a positive -rate are required")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	transport := &http.Transport{
		// Go sets TCP_NODELAY on every TCP connection by default.
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        *connections,
		MaxIdleConnsPerHost: *connections,
		MaxConnsPerHost:     *connections,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	header := http.Header{}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			fmt.Fprintf(os.Stderr, "loadgen: header %q is not 'name: value'\n", h)
			os.Exit(2)
		}
		header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	payload := []byte(*body)

	skipped := int(*rate * warmup.Seconds())
	total := skipped + int(*rate*duration.Seconds())
	interval := time.Duration(float64(time.Second) / *rate)
	latencies := make([]int64, 0, total)
	var mu sync.Mutex
	var wg sync.WaitGroup
	res := result{Sent: total - skipped}

	fire := func(scheduled time.Time, record bool) {
		defer wg.Done()
		req, err := http.NewRequest(*method, *url, bytes.NewReader(payload))
		if err == nil {
			req.Header = header.Clone()
			req.ContentLength = int64(len(payload))
			var resp *http.Response
			resp, err = client.Do(req)
			if err == nil {
				var elapsed time.Duration
				if *ttfb {
					one := make([]byte, 1)
					_, err = io.ReadFull(resp.Body, one)
					elapsed = time.Since(scheduled)
					_, _ = io.Copy(io.Discard, resp.Body)
				} else {
					_, err = io.Copy(io.Discard, resp.Body)
					elapsed = time.Since(scheduled)
				}
				resp.Body.Close()
				if err == nil && resp.StatusCode >= 400 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				if err == nil {
					if record {
						mu.Lock()
						latencies = append(latencies, elapsed.Microseconds())
						mu.Unlock()
					}
					return
				}
			}
		}
		if !record {
			return
		}
		mu.Lock()
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
		mu.Unlock()
	}

	// The sender owns its OS thread so the timer slack set here applies to
	// its sleeps (PR_SET_TIMERSLACK is per thread).
	runtime.LockOSThread()
	const prSetTimerSlack = 29
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	start := time.Now()
	measuredFrom := start
	for i := 0; i < total; i++ {
		scheduled := start.Add(time.Duration(i) * interval)
		if wait := time.Until(scheduled); wait > 0 {
			ts := syscall.NsecToTimespec(int64(wait))
			_ = syscall.Nanosleep(&ts, nil)
		}
		if i == skipped {
			measuredFrom = scheduled
		}
		wg.Add(1)
		go fire(scheduled, i >= skipped)
	}
	wg.Wait()
	res.ElapsedS = time.Since(measuredFrom).Seconds()
	res.OK = len(latencies)
	res.LatenciesUs = latencies
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}
