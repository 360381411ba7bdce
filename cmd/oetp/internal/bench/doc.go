// Package bench measures oETP against the limit of the medium underneath it:
// what users run (scenario proc: `oetp serve` and the one-shot commands as
// separate processes over a veth pair, default flags, unpinned, timed as
// the commands report it, also with a terminal for the progress bar, and an
// endpoint of this process against the same serve), the codec on its own,
// the engine on the in-process switch (link/mem), and the engine over a
// veth pair between two network namespaces in one process, each next to a
// baseline measured in the same run on the same medium with the same frame
// sizes and no protocol work at all.
//
// A run is a list of Results. Engine figures carry the baseline they are
// compared with and their ratio to it, so a reader sees at once how close the
// protocol comes to the medium: an RMEM read against a raw 24↔24-byte
// ping-pong, a DMA write fragment against a raw 8192↔20 ping-pong, a DMA read
// fragment against a raw 28↔8184 ping-pong (v1 keeps one fragment in flight,
// so the ping-pong is exactly its limit).
//
// Every measurement is bounded twice, by time and by operation count, and
// stops by itself. Baseline and engine measurements are interleaved in
// rounds so that background load on a shared machine hits both alike.
// Allocation figures are runtime.MemStats mallocs deltas over the steady
// state divided by the frames moved, for the whole process.
//
// The veth baseline is the fastest plain method: blocking read(2) and
// write(2) on an AF_PACKET socket from a thread locked to it, a ready echo
// loop on the far side, no protocol work. It runs twice, with both threads
// pinned to one CPU and free to run anywhere; the faster one is the limit
// (on a VM, a wake-up across CPUs costs more than the whole exchange on
// one). Its frames carry EtherType 0x88B6 so that the engine's links never
// see them. The engine's rows get the same placement as the one-CPU
// baseline: during each engine round every thread of the process (both
// endpoints' receive loops, the caller, the Go runtime's) is pinned to that
// CPU, and released afterwards; Options.EngineAnyCPU (oetp bench
// --engine-any-cpu) leaves them free.
//
// The veth scenario needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to build
// the namespaces; without it, it is reported as skipped with the reason.
package bench
