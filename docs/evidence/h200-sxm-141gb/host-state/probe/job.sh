set -u
export PYTHONPATH=/work/main:/tmp/site PYTHONUNBUFFERED=1
cd /work/main
nproc >/root/hoststate/host.txt; lscpu >>/root/hoststate/host.txt 2>&1; nvidia-smi -L >>/root/hoststate/host.txt
for r in plain-1 workers:shutdown-workers plain-2 freeze:gc-freeze; do
  label=${r%%:*}; opts=
  case $r in *:*) for o in $(echo ${r#*:} | tr , ' '); do opts="$opts --$o"; done ;; esac
  echo "== $(date -u +%T) $label$opts"
  python3 benchmarks/host_state_probe.py --label $label $opts --until 120 --every 10     --out /root/hoststate/$label.json 2>/root/hoststate/$label.err
  echo "== $(date -u +%T) $label: exit $?"
done
touch /root/hoststate/done
