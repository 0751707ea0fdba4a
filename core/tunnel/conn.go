package tunnel

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// Limits bound what one tunnelled connection may hold on its stream. The protocol has no flow
// control: the stream delivers a connection's data as fast as the other end sends it, so a
// reader that stops reading would otherwise stall the stream for every connection on it.
type Limits struct {
	// QueueBytes and QueuePackets cap the data received for a connection and not read yet
	// (default 1 MiB and 64 packets).
	QueueBytes, QueuePackets int
	// OverflowWait is how long the stream waits for a reader whose queue is full before it cuts
	// that connection and goes on with the others (default 1s). A reader that is merely slower
	// than the sender thus slows the stream a little; one that stopped costs it OverflowWait once.
	OverflowWait time.Duration
	// StallTimeout cuts a connection whose queued data nobody has read for that long (default 30s).
	StallTimeout time.Duration
	// ChunkSize is the largest DATA payload sent (default 32 KiB).
	ChunkSize int
}

// DefaultLimits are the limits used where none are set.
var DefaultLimits = Limits{QueueBytes: 1 << 20, QueuePackets: 64, OverflowWait: time.Second, StallTimeout: 30 * time.Second, ChunkSize: 32 << 10}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.QueueBytes > 0 {
		d.QueueBytes = l.QueueBytes
	}
	if l.QueuePackets > 0 {
		d.QueuePackets = l.QueuePackets
	}
	if l.OverflowWait > 0 {
		d.OverflowWait = l.OverflowWait
	}
	if l.StallTimeout > 0 {
		d.StallTimeout = l.StallTimeout
	}
	if l.ChunkSize > 0 {
		d.ChunkSize = l.ChunkSize
	}
	return d
}

// Side is which end of the protocol a Mux is: it decides the close packet a connection sends.
type Side int

const (
	// Dialer is the end that asked for the connection (the hub): it closes with CLOSE_REQ, and
	// the other end's CLOSE_RSP closes it.
	Dialer Side = iota
	// Acceptor is the end that dialed the target (the agent): it closes with CLOSE_RSP, also in
	// answer to a CLOSE_REQ.
	Acceptor
)

// MuxOptions configure a Mux.
type MuxOptions struct {
	Side   Side
	Limits Limits
	// Bytes, if set, counts the payload bytes the Mux receives (in) and sends (out).
	Bytes func(in bool, n int)
	// Cut, if set, is told of every connection cut for a stalled reader.
	Cut func(c *Conn, err error)
}

// Mux holds the connections carried by one packet stream. Its send function is called by
// one goroutine at a time.
type Mux struct {
	opts   MuxOptions
	sendMu sync.Mutex
	send   func(*konnectivity.Packet) error

	mu    sync.Mutex
	conns map[int64]*Conn
	err   error // set once the stream ended
}

// NewMux returns a Mux sending on send.
func NewMux(send func(*konnectivity.Packet) error, opts MuxOptions) *Mux {
	opts.Limits = opts.Limits.withDefaults()
	return &Mux{opts: opts, send: send, conns: map[int64]*Conn{}}
}

// Send sends p on the stream (serialized: gRPC streams take one sender at a time).
func (m *Mux) Send(p *konnectivity.Packet) error {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	return m.send(p)
}

// Len is the number of open connections.
func (m *Mux) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// Open registers connection id, described by what in errors (e.g. "cluster1 address
// cluster1:443"). It fails once the stream has ended, or for an id in use.
func (m *Mux) Open(id int64, what string, local, remote net.Addr) (*Conn, error) {
	c := &Conn{
		id: id, mux: m, what: what, local: local, remote: remote,
		readable: make(chan struct{}, 1), space: make(chan struct{}, 1), done: make(chan struct{}),
	}
	c.rd.init()
	c.wd.init()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	if _, dup := m.conns[id]; dup {
		return nil, fmt.Errorf("connection %d is already open on this stream", id)
	}
	m.conns[id] = c
	return c, nil
}

// Get is the open connection id, or nil.
func (m *Mux) Get(id int64) *Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conns[id]
}

// Data delivers a DATA packet to its connection. It waits for a full queue's reader at most
// Limits.OverflowWait, then cuts that connection. It reports whether the connection was known.
func (m *Mux) Data(d *konnectivity.Data) bool {
	if m.opts.Bytes != nil {
		m.opts.Bytes(true, len(d.Data))
	}
	c := m.Get(d.ConnectID)
	if c == nil {
		return false
	}
	if d.Error != "" {
		c.remoteClosed(d.Error)
		return true
	}
	c.deliver(d.Data)
	return true
}

// RemoteClosed closes connection id as the other end asked (CLOSE_RSP at the dialer, CLOSE_REQ at
// the acceptor): its reader gets the queued data, then io.EOF (or errMsg). It reports whether
// the connection was known.
func (m *Mux) RemoteClosed(id int64, errMsg string) bool {
	c := m.Get(id)
	if c == nil {
		return false
	}
	c.remoteClosed(errMsg)
	return true
}

// Shutdown ends every connection with err: the stream has ended. Later Opens fail with err.
func (m *Mux) Shutdown(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	conns := make([]*Conn, 0, len(m.conns))
	for _, c := range m.conns {
		conns = append(conns, c)
	}
	clear(m.conns)
	m.mu.Unlock()
	for _, c := range conns {
		c.fail(err, false)
	}
}

func (m *Mux) remove(c *Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns[c.id] == c {
		delete(m.conns, c.id)
	}
}

func (m *Mux) closePacket(id int64, errMsg string) *konnectivity.Packet {
	if m.opts.Side == Dialer {
		return &konnectivity.Packet{Type: konnectivity.PacketType_CLOSE_REQ,
			Payload: &konnectivity.Packet_CloseRequest{CloseRequest: &konnectivity.CloseRequest{ConnectID: id}}}
	}
	return &konnectivity.Packet{Type: konnectivity.PacketType_CLOSE_RSP,
		Payload: &konnectivity.Packet_CloseResponse{CloseResponse: &konnectivity.CloseResponse{ConnectID: id, Error: errMsg}}}
}

// ErrStalled is wrapped by the error a connection is cut with when its reader stopped reading.
var ErrStalled = errors.New("reader stalled")

// Conn is one TCP connection carried by a stream, as a net.Conn.
type Conn struct {
	id            int64
	mux           *Mux
	what          string
	local, remote net.Addr

	readable, space chan struct{} // signals, capacity 1
	done            chan struct{} // closed when the connection ends for the reader
	rd, wd          deadline

	mu       sync.Mutex
	queue    [][]byte
	head     []byte
	queued   int
	lastRead time.Time
	stall    *time.Timer
	readErr  error // what Read returns once the queue is drained (nil: still open)
	eof      bool  // the other end closed: Read drains the queue before readErr
	closed   bool  // the close packet was sent or is not needed
}

// Done is closed when the connection has ended for its reader: closed at either end, cut,
// or its stream ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// ID is the connection's connectID.
func (c *Conn) ID() int64 { return c.id }

// Read reads received data.
func (c *Conn) Read(b []byte) (int, error) {
	for {
		c.mu.Lock()
		if len(c.head) == 0 && len(c.queue) > 0 && (c.readErr == nil || c.eof) {
			c.head, c.queue[0] = c.queue[0], nil
			c.queue = c.queue[1:]
		}
		if len(c.head) > 0 {
			n := copy(b, c.head)
			c.head = c.head[n:]
			c.queued -= n
			c.lastRead = time.Now()
			c.mu.Unlock()
			signal(c.space)
			return n, nil
		}
		if err := c.readErr; err != nil {
			c.mu.Unlock()
			return 0, err
		}
		c.mu.Unlock()
		if len(b) == 0 {
			return 0, nil
		}
		select {
		case <-c.readable:
		case <-c.done:
		case <-c.rd.wait():
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// Write sends b in DATA packets of at most Limits.ChunkSize.
func (c *Conn) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		select {
		case <-c.wd.wait():
			return n, os.ErrDeadlineExceeded
		default:
		}
		c.mu.Lock()
		err := c.readErr
		if err != nil && c.eof {
			err = fmt.Errorf("%s: closed by the other end", c.what)
		}
		c.mu.Unlock()
		if err != nil {
			return n, err
		}
		chunk := b[:min(len(b), c.mux.opts.Limits.ChunkSize)]
		// gRPC marshals the message before Send returns, so b may be reused after.
		if err := c.mux.Send(&konnectivity.Packet{Type: konnectivity.PacketType_DATA,
			Payload: &konnectivity.Packet_Data{Data: &konnectivity.Data{ConnectID: c.id, Data: chunk}}}); err != nil {
			return n, fmt.Errorf("%s: %w", c.what, err)
		}
		if c.mux.opts.Bytes != nil {
			c.mux.opts.Bytes(false, len(chunk))
		}
		n += len(chunk)
		b = b[len(chunk):]
	}
	return n, nil
}

// Close closes the connection and tells the other end (unless it closed it first).
func (c *Conn) Close() error {
	c.fail(net.ErrClosed, true)
	return nil
}

// deliver queues data for the reader, waiting for room at most OverflowWait.
func (c *Conn) deliver(data []byte) {
	lim := c.mux.opts.Limits
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.mu.Lock()
		if c.readErr != nil {
			c.mu.Unlock()
			return
		}
		packets := len(c.queue)
		if len(c.head) > 0 {
			packets++
		}
		if packets == 0 || (c.queued+len(data) <= lim.QueueBytes && packets < lim.QueuePackets) {
			if packets == 0 {
				c.lastRead = time.Now()
				if c.stall == nil {
					c.stall = time.AfterFunc(lim.StallTimeout, c.checkStall)
				} else {
					c.stall.Reset(lim.StallTimeout)
				}
			}
			c.queue = append(c.queue, data)
			c.queued += len(data)
			c.mu.Unlock()
			signal(c.readable)
			return
		}
		queued := c.queued
		c.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(lim.OverflowWait)
		}
		select {
		case <-c.space:
		case <-c.done:
		case <-timer.C:
			c.cut(fmt.Errorf("%s: %w: %d bytes in %d packets unread after waiting %s for room (the connection carries no flow control)",
				c.what, ErrStalled, queued, packets, lim.OverflowWait))
			return
		}
	}
}

// checkStall cuts the connection if its queued data has not been read for StallTimeout.
func (c *Conn) checkStall() {
	lim := c.mux.opts.Limits
	c.mu.Lock()
	if c.readErr != nil || c.queued == 0 && len(c.head) == 0 && len(c.queue) == 0 {
		c.mu.Unlock()
		return
	}
	idle := time.Since(c.lastRead)
	if idle < lim.StallTimeout {
		c.stall.Reset(lim.StallTimeout - idle)
		c.mu.Unlock()
		return
	}
	queued := c.queued
	c.mu.Unlock()
	c.cut(fmt.Errorf("%s: %w: %d bytes unread for %s", c.what, ErrStalled, queued, idle.Round(time.Millisecond)))
}

func (c *Conn) cut(err error) {
	if c.fail(err, true) && c.mux.opts.Cut != nil {
		c.mux.opts.Cut(c, err)
	}
}

// remoteClosed: the other end closed the connection; the reader drains the queue first.
func (c *Conn) remoteClosed(errMsg string) {
	var err error = io.EOF
	if errMsg != "" {
		err = fmt.Errorf("%s: %s", c.what, errMsg)
	}
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return
	}
	c.readErr, c.eof = err, true
	// The dialer's close is answered by nothing more; the acceptor answers a CLOSE_REQ with
	// CLOSE_RSP when it closes its side (Close).
	c.closed = c.mux.opts.Side == Dialer
	c.mu.Unlock()
	c.mux.remove(c)
	close(c.done)
}

// fail ends the connection for its reader with err (dropping queued data) and, if notify and
// the other end needs it, sends the close packet. It reports whether this call ended it.
func (c *Conn) fail(err error, notify bool) bool {
	c.mu.Lock()
	first := c.readErr == nil
	if first {
		c.readErr = err
		close(c.done)
	} else if !c.eof {
		// Already failed; the close packet went out then (or was not needed).
		c.mu.Unlock()
		return false
	}
	c.eof = false
	c.queue, c.head, c.queued = nil, nil, 0
	if c.stall != nil {
		c.stall.Stop()
	}
	send := notify && !c.closed
	c.closed = true
	c.mu.Unlock()
	c.mux.remove(c)
	if send {
		msg := ""
		if !errors.Is(err, net.ErrClosed) {
			msg = err.Error()
		}
		_ = c.mux.Send(c.mux.closePacket(c.id, msg))
	}
	return first
}

func (c *Conn) LocalAddr() net.Addr  { return c.local }
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

func (c *Conn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}
func (c *Conn) SetReadDeadline(t time.Time) error  { c.rd.set(t); return nil }
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// deadline is a settable deadline whose wait channel is closed once it passes.
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	passed chan struct{}
}

func (d *deadline) init() { d.passed = make(chan struct{}) }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.passed // the timer fired (or is firing): wait for it, then start over
	}
	d.timer = nil
	select {
	case <-d.passed:
		d.passed = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return
	}
	if dur := time.Until(t); dur <= 0 {
		close(d.passed)
		return
	}
	passed := d.passed
	d.timer = time.AfterFunc(time.Until(t), func() { close(passed) })
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.passed
}
