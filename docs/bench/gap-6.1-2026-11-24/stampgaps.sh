#!/bin/sh
# stampgaps.sh FILE [LABEL]: summarises an RDMAPERF_STAMPS file, the gaps
# between consecutive posts in us: percentiles, the gaps over twice the
# median and their excess over it, and the gaps over 1 ms.
awk 'NR==1{mhz=$3; next} {if (p) print ($1-p)/mhz; p=$1}' "$1" | sort -n > "$1.gaps"
awk -v label="${2:-gaps}" '{g[NR]=$1; s+=$1} END{n=NR; m=g[int(n/2)];
  for(i=1;i<=n;i++){ if(g[i]>2*m){k++; x+=g[i]-m} if(g[i]>1000)big++ }
  printf "    %s: n %d total %.0f us; p10 %.1f median %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.0f; >2x median: %d gaps, excess over median %.0f us (%.1f%% of total); >1ms: %d\n",
    label, n, s, g[int(n*0.1)], m, g[int(n*0.9)], g[int(n*0.99)], g[int(n*0.999)], g[n], k, x, 100*x/s, big }' "$1.gaps"
