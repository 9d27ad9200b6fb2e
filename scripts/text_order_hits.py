# text_order_hits.py - gdb script of scripts/gen_text_order.sh: runs the
# program given to gdb (--args EXE ARGS...) with a one-shot breakpoint on
# every function of its symbol table and writes the functions it enters, in
# the order of their first call, one name per line, to $HITS_OUT.  Each
# breakpoint is deleted at its first hit, so the run takes about a second.
import os
import subprocess

import gdb

exe = gdb.current_progspace().filename
out = os.environ['HITS_OUT']
names = {}
nm = subprocess.run(['nm', '--defined-only', exe], capture_output=True, text=True, check=True).stdout
for line in nm.split('\n'):
    p = line.split()
    if len(p) == 3 and p[1] in 'tTwW':
        names.setdefault(int(p[0], 16), p[2])  # one name per address (aliases share it)

gdb.execute('set pagination off')
gdb.execute('set confirm off')
gdb.execute('set breakpoint always-inserted on')
hits, pending = [], []


class FirstCall(gdb.Breakpoint):
    def __init__(self, addr, name):
        super().__init__('*%d' % addr, internal=True)
        self.fn = name

    def stop(self):
        hits.append(self.fn)
        pending.append(self)
        return True


gdb.execute('starti')
for addr, name in names.items():
    try:
        FirstCall(addr, name)
    except gdb.error:
        pass
while True:
    try:
        gdb.execute('continue', to_string=True)
    except gdb.error:
        break
    if not gdb.selected_inferior().pid:
        break
    while pending:
        pending.pop().delete()
with open(out, 'w') as f:
    f.write('\n'.join(hits) + '\n')
