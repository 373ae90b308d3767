set -u
export PYTHONPATH=/tmp/vsite:/work/main:/tmp/site PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 LLMBENCH_GIT_COMMIT=bf9aaae0980039e14eb603811bd41a28ff6ee3ab
cd /work/main
step() { echo "== $(date -u +%T) $1"; }
nvidia-smi topo -m > /root/node/topo.txt 2>&1
env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)=' > /root/node/multicast.txt
for s in binding; do
  t0=$(date +%s); step "$s"
  case $s in
    oneshot) python3 -m llmbench oneshot --dry-run --out /root/node/oneshot --budget 15m >/root/node/dryrun.txt 2>&1
             python3 -m llmbench oneshot --budget 15m --out /root/node/oneshot >/root/node/oneshot.log 2>&1 ;;
    plain)   python3 benchmarks/plain_vllm_tp.py --out /root/node/plain-vllm.json >/root/node/plain.log 2>&1 ;;
    tp70b)   python3 -m llmbench run tp-vs-replicas --gpus 0,1 --out /root/node/r --resume -k model=llama-3-70b                -y >/root/node/tp70b.log 2>&1 ;;
    serving) python3 -m llmbench run serving-tp-vs-dp --gpus 0,1 --out /root/node/r --resume -y >/root/node/serving.log 2>&1 ;;
    alone)   python3 -m llmbench run headline --gpus 0 --out /root/node/alone -k id=generate/8cc784466667,generate/db3f8075a283,qlora/f76c4f602102,trainer/60bef84dcb4c -y >/root/node/alone.log 2>&1 ;;
    binding) half=$(python3 -c 'from llmbench.hardware.cpus import cpu_list, cpu_shares; print(cpu_list(cpu_shares(2)[0]))')
             echo "bound to $half" >>/root/node/binding.log
             for r in $(seq 1); do
               python3 -m llmbench run headline --gpus 0 --out /root/node/bind-all -k id=generate/8cc784466667,generate/db3f8075a283,qlora/f76c4f602102,trainer/60bef84dcb4c -y >>/root/node/binding.log 2>&1
               taskset -c $half python3 -m llmbench run headline --gpus 0 --out /root/node/bind-half -k id=generate/8cc784466667,generate/db3f8075a283,qlora/f76c4f602102,trainer/60bef84dcb4c                  -y >>/root/node/binding.log 2>&1
             done ;;
    plain-one) python3 benchmarks/plain_vllm_tp.py --layouts one --batches 1,16,32 --out /root/node/plain-one.json                >/root/node/plain-one.log 2>&1 ;;
    neighbour) python3 benchmarks/neighbour_load.py --out /root/node/neighbour.json >/root/node/neighbour.log 2>&1 ;;
    tuning|tuning:*)
             suite=fp8-kernel-tuning id=generate/a116c5185493
             [ "$s" = tuning ] || { suite=${s#tuning:}; id=${suite#*:}; suite=${suite%%:*}; }
             for r in $(seq 2); do
               taskset -c 0-15 python3 -m llmbench run $suite --gpus 0 -k id=$id                  --out /root/node/tune-alone -y >>/root/node/tuning.log 2>&1
               CUDA_VISIBLE_DEVICES=1 setsid taskset -c 16-31 python3 benchmarks/neighbour_load.py --load                  >>/root/node/tune-load.log 2>&1 & lp=$!  # a group of its own: its compile workers go with it
               sleep 20  # the loader compiling before the case starts
               taskset -c 0-15 python3 -m llmbench run $suite --gpus 0 -k id=$id                  --out /root/node/tune-beside -y >>/root/node/tuning.log 2>&1
               kill -- -$lp; wait $lp
             done ;;
    kernel-tuning) python3 -m llmbench run fp8-kernel-tuning --gpus 0 -k library_kernel_settings=false                --out /root/node/kernel-tuning -y >/root/node/kernel-tuning.log 2>&1 ;;
  esac
  step "$s: exit $?, $(( $(date +%s) - t0 )) s"
done
touch /root/node/done
