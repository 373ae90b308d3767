# Sourced by the scripts in this folder (run them from the repository root): the output folder, this
# checkout's llmbench on the path, and packages the GPU machine lacks.
#   OUT                  where result sets and logs go (default /tmp/llmbench-out)
#   .whl/*.whl           wheels to install first (into /tmp/site, no index needed), if the folder exists
#   /tmp/te-site         Transformer Engine installed with `pip install --target /tmp/te-site`, if present
OUT=${OUT:-/tmp/llmbench-out}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
[ -d /tmp/te-site ] && export PYTHONPATH=/tmp/te-site${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
