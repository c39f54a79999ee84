// Command gocompat runs Apache's Go RocketMQ client (github.com/apache/rocketmq-client-go/v2,
// pinned in go.mod) against a nameserver and broker and checks what comes back.
//
// It owns the Go half of tests/test_compat_go.py: sync, async and batch sends; a `*` push
// consumer and a `TagA || TagB` push consumer (other groups) that must get exactly their
// messages; orderly consumption (sharding-key hash selector, per-queue order checked); retry
// (the listener answers ConsumeRetryLater once, the message must come back with
// reconsumeTimes 1); delay (level 1 must not arrive before delayLevel1 has passed).
//
//	gocompat -namesrv 127.0.0.1:9876 [-broker 127.0.0.1:10911] [-count 60]
//
// With -broker the topics are created first (UPDATE_AND_CREATE_TOPIC through the client's
// admin API); without it they must exist. The last stdout line is a JSON summary; exit 0 =
// every check passed, 1 = a check failed, 2 = setup error.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var tags = []string{"TagA", "TagB", "TagC"}

type config struct {
	namesrv, broker, prefix, logDir string
	count                           int
	timeout, delayLevel1            time.Duration
}

// summary is printed as the last stdout line.
type summary struct {
	OK       bool                   `json:"ok"`
	Client   string                 `json:"client"`
	Prefix   string                 `json:"prefix"`
	Phases   map[string]interface{} `json:"phases"`
	Errors   []string               `json:"errors"`
	Seconds  float64                `json:"seconds"`
	setupErr bool
}

func (s *summary) fail(format string, args ...interface{}) {
	s.OK = false
	s.Errors = append(s.Errors, fmt.Sprintf(format, args...))
}

func main() {
	var cfg config
	flag.StringVar(&cfg.namesrv, "namesrv", "", "nameserver address host:port (required)")
	flag.StringVar(&cfg.broker, "broker", "", "broker address: create the topics there first")
	flag.StringVar(&cfg.prefix, "prefix", fmt.Sprintf("go%d", time.Now().UnixNano()/1e6), "topic/group name prefix")
	flag.StringVar(&cfg.logDir, "log-dir", os.TempDir(), "directory for the client's own log")
	flag.IntVar(&cfg.count, "count", 60, "messages per send mode (sync, async, batch)")
	flag.DurationVar(&cfg.timeout, "timeout", 60*time.Second, "wait for each consume phase")
	flag.DurationVar(&cfg.delayLevel1, "delay-level1", time.Second, "the broker's delay of level 1")
	flag.Parse()
	if cfg.namesrv == "" {
		fmt.Fprintln(os.Stderr, "-namesrv is required")
		os.Exit(2)
	}
	rlog.SetLogLevel("warn")
	_ = os.MkdirAll(cfg.logDir, 0o755)
	if err := rlog.SetOutputPath(cfg.logDir + "/rocketmq_client_go.log"); err != nil {
		fmt.Fprintln(os.Stderr, "client log:", err)
	}

	started := time.Now()
	s := &summary{OK: true, Client: "rocketmq-client-go/v2", Prefix: cfg.prefix,
		Phases: map[string]interface{}{}, Errors: []string{}}
	run(cfg, s)
	s.Seconds = time.Since(started).Seconds()
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
	switch {
	case s.setupErr:
		os.Exit(2)
	case !s.OK:
		os.Exit(1)
	}
}

func topic(cfg config, name string) string { return cfg.prefix + "_" + name }

func run(cfg config, s *summary) {
	ns := primitive.NamesrvAddr{cfg.namesrv}
	if cfg.broker != "" {
		if err := createTopics(cfg); err != nil {
			s.setupErr = true
			s.fail("create topics: %v", err)
			return
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	phase := func(name string, f func(config, primitive.NamesrvAddr) (map[string]interface{}, []string)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			info, errs := f(cfg, ns)
			info["seconds"] = time.Since(began).Seconds()
			mu.Lock()
			defer mu.Unlock()
			s.Phases[name] = info
			for _, e := range errs {
				s.fail("%s: %s", name, e)
			}
		}()
	}
	phase("produce-consume", produceConsume)
	phase("orderly", orderly)
	phase("retry", retry)
	phase("delay", delay)
	wg.Wait()
}

func createTopics(cfg config) error {
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{cfg.namesrv})))
	if err != nil {
		return err
	}
	defer adm.Close()
	// The retry group's %RETRY% topic too: the Go client looks its route up once when the
	// consumer starts and then only every 30 s, so a retry topic the broker creates on the
	// first send-back would be seen half a minute late.
	names := []string{topic(cfg, "main"), topic(cfg, "order"), topic(cfg, "retry"),
		topic(cfg, "delay"), "%RETRY%" + cfg.prefix + "_retry"}
	for _, name := range names {
		err := adm.CreateTopic(context.Background(),
			admin.WithTopicCreate(name), admin.WithBrokerAddrCreate(cfg.broker),
			admin.WithReadQueueNums(4), admin.WithWriteQueueNums(4))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func newProducer(cfg config, ns primitive.NamesrvAddr, name string, opts ...producer.Option) (rocketmq.Producer, error) {
	opts = append([]producer.Option{
		producer.WithNameServer(ns),
		producer.WithGroupName(cfg.prefix + "_p_" + name),
		producer.WithInstanceName(cfg.prefix + "_p_" + name),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(10 * time.Second),
	}, opts...)
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		return nil, err
	}
	return p, p.Start()
}

func newConsumer(cfg config, ns primitive.NamesrvAddr, group string, opts ...consumer.Option) (rocketmq.PushConsumer, error) {
	opts = append([]consumer.Option{
		consumer.WithNameServer(ns),
		consumer.WithGroupName(cfg.prefix + "_" + group),
		consumer.WithInstance(cfg.prefix + "_c_" + group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	return rocketmq.NewPushConsumer(opts...)
}

// received collects what a listener saw, keyed by body.
type received struct {
	mu     sync.Mutex
	bodies map[string][]*primitive.MessageExt
	total  int
}

func newReceived() *received { return &received{bodies: map[string][]*primitive.MessageExt{}} }

func (r *received) add(m *primitive.MessageExt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies[string(m.Body)] = append(r.bodies[string(m.Body)], m)
	r.total++
}

// waitFor polls until done() or the timeout; it reports whether done() became true.
func waitFor(timeout time.Duration, done func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if done() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return done()
}

// expectExactly compares what r saw with want (body -> tag).
func expectExactly(r *received, want map[string]string) (map[string]interface{}, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []string
	missing, unexpected, duplicates, wrongTag := 0, 0, 0, 0
	var firstMissing, firstUnexpected string
	for body, tag := range want {
		got := r.bodies[body]
		switch {
		case len(got) == 0:
			missing++
			if firstMissing == "" {
				firstMissing = body
			}
		case len(got) > 1:
			duplicates += len(got) - 1
		}
		if len(got) > 0 && got[0].GetTags() != tag {
			wrongTag++
		}
	}
	for body := range r.bodies {
		if _, ok := want[body]; !ok {
			unexpected++
			if firstUnexpected == "" {
				firstUnexpected = body
			}
		}
	}
	if missing > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d messages missing (first %q)", missing, len(want), firstMissing))
	}
	if unexpected > 0 {
		errs = append(errs, fmt.Sprintf("%d unexpected messages (first %q)", unexpected, firstUnexpected))
	}
	if duplicates > 0 {
		errs = append(errs, fmt.Sprintf("%d duplicate deliveries", duplicates))
	}
	if wrongTag > 0 {
		errs = append(errs, fmt.Sprintf("%d messages with the wrong tag", wrongTag))
	}
	info := map[string]interface{}{"expected": len(want), "received": r.total, "missing": missing,
		"unexpected": unexpected, "duplicates": duplicates, "wrongTag": wrongTag}
	return info, errs
}

// produceConsume: sync, async and batch sends to one topic, then a `*` group and a
// `TagA || TagB` group.
func produceConsume(cfg config, ns primitive.NamesrvAddr) (map[string]interface{}, []string) {
	info := map[string]interface{}{}
	t := topic(cfg, "main")
	p, err := newProducer(cfg, ns, "main")
	if err != nil {
		return info, []string{"producer start: " + err.Error()}
	}
	defer p.Shutdown()
	all := map[string]string{}
	msg := func(mode string, i int) *primitive.Message {
		tag := tags[i%len(tags)]
		body := fmt.Sprintf("%s-%s-%d", cfg.prefix, mode, i)
		all[body] = tag
		m := primitive.NewMessage(t, []byte(body)).WithTag(tag).WithKeys([]string{body})
		m.WithProperty("seq", strconv.Itoa(i))
		return m
	}
	var errs []string
	check := func(mode string, r *primitive.SendResult, err error) {
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s send: %v", mode, err))
		case r.Status != primitive.SendOK:
			errs = append(errs, fmt.Sprintf("%s send status %d", mode, r.Status))
		}
	}
	ctx := context.Background()
	for i := 0; i < cfg.count; i++ {
		r, err := p.SendSync(ctx, msg("sync", i))
		check("sync", r, err)
	}
	var asyncWG sync.WaitGroup
	var asyncMu sync.Mutex
	for i := 0; i < cfg.count; i++ {
		asyncWG.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
			asyncMu.Lock()
			defer asyncMu.Unlock()
			defer asyncWG.Done()
			check("async", r, err)
		}, msg("async", i))
		if err != nil {
			asyncWG.Done()
			errs = append(errs, "async send: "+err.Error())
		}
	}
	asyncWG.Wait()
	const batchSize = 10
	for i := 0; i < cfg.count; i += batchSize {
		var batch []*primitive.Message
		for j := i; j < i+batchSize && j < cfg.count; j++ {
			batch = append(batch, msg("batch", j))
		}
		r, err := p.SendSync(ctx, batch...)
		check("batch", r, err)
	}
	info["sent"] = len(all)
	if len(errs) > 0 {
		return info, errs
	}

	tagged := map[string]string{}
	for body, tag := range all {
		if tag == "TagA" || tag == "TagB" {
			tagged[body] = tag
		}
	}
	groups := []struct {
		name, expr string
		want       map[string]string
	}{{"all", "*", all}, {"tagAB", "TagA || TagB", tagged}}
	var consumers []rocketmq.PushConsumer
	seen := make([]*received, len(groups))
	for i, g := range groups {
		seen[i] = newReceived()
		r := seen[i]
		c, err := newConsumer(cfg, ns, g.name)
		if err == nil {
			err = c.Subscribe(t, consumer.MessageSelector{Type: consumer.TAG, Expression: g.expr},
				func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
					for _, m := range msgs {
						r.add(m)
					}
					return consumer.ConsumeSuccess, nil
				})
		}
		if err == nil {
			err = c.Start()
		}
		if err != nil {
			return info, []string{fmt.Sprintf("consumer %s: %v", g.name, err)}
		}
		consumers = append(consumers, c)
	}
	for i, g := range groups {
		r, want := seen[i], len(g.want)
		waitFor(cfg.timeout, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.bodies) >= want })
	}
	// A tag filter that leaks would deliver the extra messages interleaved with the wanted
	// ones; a short grace period catches stragglers and duplicates.
	time.Sleep(500 * time.Millisecond)
	for _, c := range consumers {
		_ = c.Shutdown()
	}
	for i, g := range groups {
		gi, gerrs := expectExactly(seen[i], g.want)
		info[g.name] = gi
		for _, e := range gerrs {
			errs = append(errs, fmt.Sprintf("group %s (%s): %s", g.name, g.expr, e))
		}
	}
	return info, errs
}

// orderly: four sharding keys through the hash selector, consumed by an orderly consumer;
// every queue must be consumed in queue-offset order and every key in send order.
func orderly(cfg config, ns primitive.NamesrvAddr) (map[string]interface{}, []string) {
	info := map[string]interface{}{}
	t := topic(cfg, "order")
	p, err := newProducer(cfg, ns, "order", producer.WithQueueSelector(producer.NewHashQueueSelector()))
	if err != nil {
		return info, []string{"producer start: " + err.Error()}
	}
	defer p.Shutdown()
	keys := []string{"order-a", "order-b", "order-c", "order-d"}
	perKey := cfg.count / 2
	want := map[string]string{}
	var errs []string
	for i := 0; i < perKey; i++ {
		for _, k := range keys {
			body := fmt.Sprintf("%s-%s-%d", cfg.prefix, k, i)
			want[body] = "TagA"
			m := primitive.NewMessage(t, []byte(body)).WithTag("TagA").WithShardingKey(k)
			m.WithProperty("seq", strconv.Itoa(i))
			if r, err := p.SendSync(context.Background(), m); err != nil || r.Status != primitive.SendOK {
				errs = append(errs, fmt.Sprintf("send %s: %v %v", body, err, r))
			}
		}
	}
	info["sent"] = len(want)
	if len(errs) > 0 {
		return info, errs
	}
	r := newReceived()
	var mu sync.Mutex
	lastOffset := map[int]int64{}
	lastSeq := map[string]int{}
	queuesOfKey := map[string]map[int]bool{}
	outOfOrder := 0
	c, err := newConsumer(cfg, ns, "order", consumer.WithConsumerOrder(true))
	if err == nil {
		err = c.Subscribe(t, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					q := m.Queue.QueueId
					if last, ok := lastOffset[q]; ok && m.QueueOffset <= last {
						outOfOrder++
					}
					lastOffset[q] = m.QueueOffset
					k := m.GetShardingKey()
					seq, _ := strconv.Atoi(m.GetProperty("seq"))
					if last, ok := lastSeq[k]; ok && seq <= last {
						outOfOrder++
					}
					lastSeq[k] = seq
					if queuesOfKey[k] == nil {
						queuesOfKey[k] = map[int]bool{}
					}
					queuesOfKey[k][q] = true
					r.add(m)
				}
				return consumer.ConsumeSuccess, nil
			})
	}
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		return info, []string{"consumer: " + err.Error()}
	}
	waitFor(cfg.timeout, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.bodies) >= len(want) })
	_ = c.Shutdown()
	gi, gerrs := expectExactly(r, want)
	info["consumed"] = gi
	errs = append(errs, gerrs...)
	mu.Lock()
	defer mu.Unlock()
	if outOfOrder > 0 {
		errs = append(errs, fmt.Sprintf("%d messages out of queue/key order", outOfOrder))
	}
	for k, qs := range queuesOfKey {
		if len(qs) != 1 {
			errs = append(errs, fmt.Sprintf("sharding key %s landed on %d queues", k, len(qs)))
		}
	}
	info["outOfOrder"] = outOfOrder
	info["queues"] = len(lastOffset)
	return info, errs
}

// retry: the listener answers ConsumeRetryLater the first time it sees a message; each
// message must come back once more, with reconsumeTimes 1.
func retry(cfg config, ns primitive.NamesrvAddr) (map[string]interface{}, []string) {
	info := map[string]interface{}{}
	t := topic(cfg, "retry")
	p, err := newProducer(cfg, ns, "retry")
	if err != nil {
		return info, []string{"producer start: " + err.Error()}
	}
	defer p.Shutdown()
	n := 4
	want := map[string]string{}
	var errs []string
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("%s-retry-%d", cfg.prefix, i)
		want[body] = "TagR"
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(t, []byte(body)).WithTag("TagR")); err != nil {
			errs = append(errs, "send: "+err.Error())
		}
	}
	if len(errs) > 0 {
		return info, errs
	}
	r := newReceived()
	c, err := newConsumer(cfg, ns, "retry")
	if err == nil {
		err = c.Subscribe(t, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				result := consumer.ConsumeSuccess
				for _, m := range msgs {
					r.add(m)
					if m.ReconsumeTimes == 0 {
						result = consumer.ConsumeRetryLater
					}
				}
				return result, nil
			})
	}
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		return info, []string{"consumer: " + err.Error()}
	}
	done := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for body := range want {
			if len(r.bodies[body]) < 2 {
				return false
			}
		}
		return true
	}
	waitFor(cfg.timeout, done)
	time.Sleep(300 * time.Millisecond)
	_ = c.Shutdown()
	r.mu.Lock()
	defer r.mu.Unlock()
	var times []string
	for body := range want {
		got := r.bodies[body]
		var rt []string
		for _, m := range got {
			rt = append(rt, strconv.Itoa(int(m.ReconsumeTimes)))
			if m.Topic != t {
				errs = append(errs, fmt.Sprintf("%s came back on topic %q", body, m.Topic))
			}
		}
		times = append(times, body[strings.LastIndex(body, "-")+1:]+":"+strings.Join(rt, ","))
		if len(got) != 2 || got[0].ReconsumeTimes != 0 || got[1].ReconsumeTimes != 1 {
			errs = append(errs, fmt.Sprintf("%s delivered with reconsumeTimes [%s], want [0,1]", body, strings.Join(rt, ",")))
		}
	}
	sort.Strings(times)
	info["reconsumeTimes"] = times
	return info, errs
}

// delay: messages with delay level 1 must not be consumed before that delay has passed.
func delay(cfg config, ns primitive.NamesrvAddr) (map[string]interface{}, []string) {
	info := map[string]interface{}{}
	t := topic(cfg, "delay")
	p, err := newProducer(cfg, ns, "delay")
	if err != nil {
		return info, []string{"producer start: " + err.Error()}
	}
	defer p.Shutdown()
	r := newReceived()
	arrived := map[string]time.Time{}
	var mu sync.Mutex
	c, err := newConsumer(cfg, ns, "delay")
	if err == nil {
		err = c.Subscribe(t, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					if _, ok := arrived[string(m.Body)]; !ok {
						arrived[string(m.Body)] = time.Now()
					}
					r.add(m)
				}
				return consumer.ConsumeSuccess, nil
			})
	}
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		return info, []string{"consumer: " + err.Error()}
	}
	defer c.Shutdown()
	// Let the consumer's rebalance settle so it is already polling when the messages become due.
	time.Sleep(time.Second)
	n := 4
	want := map[string]string{}
	sentAt := map[string]time.Time{}
	var errs []string
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("%s-delay-%d", cfg.prefix, i)
		want[body] = "TagD"
		sentAt[body] = time.Now()
		m := primitive.NewMessage(t, []byte(body)).WithTag("TagD").WithDelayTimeLevel(1)
		if _, err := p.SendSync(context.Background(), m); err != nil {
			errs = append(errs, "send: "+err.Error())
		}
	}
	if len(errs) > 0 {
		return info, errs
	}
	waitFor(cfg.timeout, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.bodies) >= n })
	gi, gerrs := expectExactly(r, want)
	info["consumed"] = gi
	errs = append(errs, gerrs...)
	mu.Lock()
	defer mu.Unlock()
	var early []string
	minDelay := time.Hour
	for body, at := range arrived {
		d := at.Sub(sentAt[body])
		if d < minDelay {
			minDelay = d
		}
		if d < cfg.delayLevel1 {
			early = append(early, fmt.Sprintf("%s after %v", body, d))
		}
	}
	if len(early) > 0 {
		errs = append(errs, fmt.Sprintf("consumed before delay level 1 (%v): %s", cfg.delayLevel1, strings.Join(early, "; ")))
	}
	if len(arrived) > 0 {
		info["minDelayMs"] = minDelay.Milliseconds()
	}
	return info, errs
}
