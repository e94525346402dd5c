set -u
# the A/B of 2-branches and 3-staged-codes (sets carried in .carry/ptx.tar.xz: docs_pred = 1-predicated)
export DEST=${DEST:-x}; R=.carry/recur; U=.carry/unpacked
timeout 400 bash bench/h200_suite.sh docs; echo "suite rc $?"
B="--rounds 1 --samples 5 --profile"
for set in docs_pred docs docs_pred docs; do
 for m in rglru samu; do
  case $m in rglru) v=fused_grouped_prefix32_onepass_chunk8 ;; samu) v=fused_output_fused_write_shared_sfu_grouped_prefix32_onepass_chunk8 ;; esac
  echo "== $set $m"; timeout 60 $R bench --dir $U/$set --mixer $m --variant docs_$v --shapes 1x131072x1024 --resets 0.00049 --packed $B 2>&1 | grep -E "^(rglru|samu) +1x|fwd_scan|bwd_apply" | awk '!s[$0]++'
 done
done
