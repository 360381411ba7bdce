#!/usr/bin/env python3
"""A/B harness: oetp serve and one-shot oetp commands as users run
them (separate processes, default flags, unpinned unless --pin), binaries
taking turns, reporting per binary the median MB/s (or, with --op rmem, the
operation's µs) and the CPU per fragment of the client (wait4 rusage) and of
serve (/proc/PID/task/*/schedstat). Run as root:

    python3 contrib/bench/ab.py BIN_A BIN_B --rounds 3 --ops 4 --size $((64<<20)) [--op write|read|rmem] [--pin C,S] [--transport reliable]

--transport reliable gives serve's peers transport=reliable and the commands
--transport reliable (8136-byte fragments). It creates the namespaces
spa<PID>/spb<PID> with the veth pair vsa/vsb (MTU 9000) and deletes them at
the end. On a shared machine, state the load average (printed)
with the figures. See docs/benchmarks.md.
"""
import os, sys, subprocess, json, time, glob, statistics, argparse, threading
ap = argparse.ArgumentParser()
ap.add_argument('bins', nargs='+')
ap.add_argument('--rounds', type=int, default=3)
ap.add_argument('--ops', type=int, default=6)
ap.add_argument('--size', type=int, default=16<<20)
ap.add_argument('--op', default='write')
ap.add_argument('--pin', default='')
ap.add_argument('--transport', default='v1', choices=['v1', 'reliable'])
a = ap.parse_args()
A, B = f'spa{os.getpid()}', f'spb{os.getpid()}'
PT = '' if a.transport == 'v1' else ',transport=reliable'
CT = ['--transport', a.transport]
def sh(c, check=True): return subprocess.run(c, shell=True, check=check, capture_output=True, text=True)
sh(f'ip netns del {A}', False); sh(f'ip netns del {B}', False)
sh(f'ip netns add {A}; ip netns add {B}; ip link add vsa netns {A} type veth peer name vsb netns {B}')
for ns, ifn, mac in ((A,'vsa','02:0e:0c:00:00:01'),(B,'vsb','02:0e:0c:00:00:02')):
    sh(f'ip -n {ns} link set {ifn} address {mac} mtu 9000 up; ip -n {ns} link set lo up')
    sh(f'ip netns exec {ns} sysctl -qw net.ipv6.conf.all.disable_ipv6=1', False)
WMAC, RMAC = '02:0e:0c:00:01:01', '02:0e:0c:00:02:01'
src = '/tmp/oetp-ab-src.bin'
if not os.path.exists(src) or os.path.getsize(src) != a.size:
    with open(src, 'wb') as f: f.write(bytes((i*29+11) & 255 for i in range(a.size)))
def cpu(pid):
    t = 0
    for p in glob.glob(f'/proc/{pid}/task/*/schedstat'):
        try: t += int(open(p).read().split()[0])
        except OSError: pass
    return t
frag = 8160 if a.transport == 'v1' else 8136
CP, SP = ([], []) if not a.pin else (['taskset','-c',a.pin.split(',')[0]], ['taskset','-c',a.pin.split(',')[1]])
nf = (a.size + frag - 1)//frag
res = {b: {'mbs': [], 'ccpu': [], 'scpu': []} for b in a.bins}
srv = None
try:
    for r in range(a.rounds):
        for b in a.bins:
            srv = subprocess.Popen(SP+['ip','netns','exec',B,b,'serve','--iface','vsb','--region',f'0x10000000:{a.size}',
                '--peer', f'{WMAC},mode=dma-write{PT}','--peer', f'{RMAC},mode=dma-read{PT}','--peer',f'02:0e:0c:00:00:01,mode=rmem{PT}'], stderr=subprocess.PIPE, text=True)
            for line in srv.stderr:
                if 'msg=ready' in line: break
            else:
                sys.exit(f'ab.py: {b} serve exited before it was ready ({srv.wait()})')
            # serve keeps logging: drain its standard error, or a full pipe
            # would stop it in the middle of a measurement.
            threading.Thread(target=srv.stderr.read, daemon=True).start()
            for i in range(a.ops + 1):
                if a.op == 'rmem':
                    args = [b,'rmem','read','--iface','vsa','--peer','02:0e:0c:00:00:02','--addr','0x10000000','--json']+CT
                elif a.op == 'write':
                    args = [b,'dma','write','--iface','vsa','--mac',WMAC,'--peer','02:0e:0c:00:00:02','--addr','0x10000000','--in',src,'--json']+CT
                else:
                    args = [b,'dma','read','--iface','vsa','--mac',RMAC,'--peer','02:0e:0c:00:00:02','--addr','0x10000000','--length',str(a.size),'--out','/tmp/oetp-ab-out.bin','--json']+CT
                s0 = cpu(srv.pid)
                p = subprocess.Popen(CP+['ip','netns','exec',A]+args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                out = p.stdout.read()
                _, st, ru = os.wait4(p.pid, 0)
                s1 = cpu(srv.pid)
                if not out.strip():
                    sys.exit(f'ab.py: {" ".join(args)} printed nothing (exit status {os.waitstatus_to_exitcode(st)})')
                j = json.loads(out.strip().splitlines()[-1])
                assert j.get('ok'), out
                if i == 0: continue  # warm-up op
                res[b]['mbs'].append(a.size/j['seconds']/1e6 if a.op != 'rmem' else j['seconds']*1e6)
                res[b]['ccpu'].append((ru.ru_utime+ru.ru_stime)*1e6/nf)
                res[b]['scpu'].append((s1-s0)/1e3/nf)
            srv.terminate(); srv.wait()
            srv = None
finally:
    if srv is not None:
        srv.kill(); srv.wait()
    sh(f'ip netns del {A}', False); sh(f'ip netns del {B}', False)
la = open('/proc/loadavg').read().split()[:3]
print(f'pin={a.pin} op={a.op} transport={a.transport} size={a.size} rounds={a.rounds} ops/round={a.ops} load={la}')
for b in a.bins:
    d = res[b]
    md = lambda x: statistics.median(x)
    print(f'{b}: MB/s med {md(d["mbs"]):.0f} (min {min(d["mbs"]):.0f} max {max(d["mbs"]):.0f})  client µs/frag {md(d["ccpu"]):.2f}  serve µs/frag {md(d["scpu"]):.2f}  total {md([x+y for x,y in zip(d["ccpu"],d["scpu"])]):.2f}')
