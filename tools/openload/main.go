// Command openload sends SETs at random moments, at a rate that does not
// depend on how fast the answers come: many connections that each write
// now and then, as devices reporting a reading do. `dss bench` keeps a
// fixed number of requests in flight instead, and each client's next
// request waits for its answer; under that load a server that delays an
// answer also delays the next request, and its latency hides part of
// itself. Here the time between two writes of a connection is drawn from
// an exponential distribution, so that the writes of all connections
// together arrive as a Poisson process of --rate writes a second, and
// the report gives the answers' percentiles.
//
//	openload --server 127.0.0.1:1883 --conns 200 --rate 2000 --duration 8s
//
// docs/benchmarks.md ("CPU per write across the cluster") uses it to
// check that the leader of a cluster does not hold such writes back
// while it gathers the writes of clients that write one at a time.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/dssio/dss/client"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.server, "server", "127.0.0.1:1883", "MQTT address of the server (HOST:PORT)")
	flag.IntVar(&cfg.conns, "conns", 200, "connections, each writing its own key")
	flag.Float64Var(&cfg.rate, "rate", 2000, "writes a second, of all connections together")
	flag.DurationVar(&cfg.duration, "duration", 8*time.Second, "how long to send")
	flag.Parse()
	r, err := run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openload:", err)
		os.Exit(1)
	}
	fmt.Println(r)
}

type config struct {
	server   string
	conns    int
	rate     float64
	duration time.Duration
}

// result is what a run measured: the writes answered, their rate, and
// the percentiles of the time from sending a write to its answer.
type result struct {
	writes             int
	rate               float64
	p50, p90, p99, max time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("writes %d (%.0f/s)  latency p50 %v  p90 %v  p99 %v  max %v",
		r.writes, r.rate, r.p50, r.p90, r.p99, r.max)
}

// run connects cfg.conns clients and sends from each, until cfg.duration
// has passed, a SET of its own key at exponentially distributed
// intervals; a write that is due while the connection's last one is not
// answered yet goes as soon as the answer comes.
func run(ctx context.Context, cfg config) (result, error) {
	if cfg.conns < 1 || cfg.rate <= 0 || cfg.duration <= 0 {
		return result{}, fmt.Errorf("--conns, --rate and --duration must be positive")
	}
	clients := make([]*client.Client, cfg.conns)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	prefix := fmt.Sprintf("openload-%d-", os.Getpid())
	for i := range clients {
		c, err := client.Dial(ctx, client.Config{Servers: []string{cfg.server}, ClientID: fmt.Sprintf("%s%d", prefix, i)})
		if err != nil {
			return result{}, err
		}
		clients[i] = c
	}
	mean := float64(cfg.conns) / cfg.rate * float64(time.Second) // between two writes of one connection
	gap := func() time.Duration { return time.Duration(rand.ExpFloat64() * mean) }
	value := []byte("0123456789012345678901234567890123456789")
	start := time.Now()
	end := start.Add(cfg.duration)
	var (
		mu       sync.Mutex
		answered []time.Duration
		failed   error
		wg       sync.WaitGroup
	)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("%s%d", prefix, i)
			var mine []time.Duration
			for next := start.Add(gap()); next.Before(end); next = next.Add(gap()) {
				time.Sleep(time.Until(next))
				sent := time.Now()
				if _, err := c.Set(ctx, key, value); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(sent))
			}
			mu.Lock()
			answered = append(answered, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if failed != nil {
		return result{}, failed
	}
	if len(answered) == 0 {
		return result{}, fmt.Errorf("no write was due within %v", cfg.duration)
	}
	slices.Sort(answered)
	at := func(q float64) time.Duration { return answered[int(q*float64(len(answered)-1))] }
	return result{
		writes: len(answered),
		rate:   float64(len(answered)) / cfg.duration.Seconds(),
		p50:    at(0.5), p90: at(0.9), p99: at(0.99), max: answered[len(answered)-1],
	}, nil
}
