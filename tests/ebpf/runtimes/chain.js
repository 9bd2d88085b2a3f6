// chain.js SECONDS: outerFn -> middleFn -> innerFn, three named functions
// doing CPU work, until the process has used SECONDS of CPU time (default
// 3), for the eBPF sampler's Node.js version test (rt_node.sh). Each
// function's body carries a dead branch long enough (over V8's 460 bytes
// of bytecode) that neither TurboFan nor Maglev inlines it into its caller:
// every sample of the chain has its three frames, with no flag on node's
// command line.
'use strict';

function innerFn(n, k) {
  let t = 0;
  for (let i = 0; i < n; i++) t = (t * 31 + i) | 0;
  if (k === 1000) t += k * 3; if (k === 1001) t += k * 4; if (k === 1002) t += k * 5; if (k === 1003) t += k * 6; if (k === 1004) t += k * 7; if (k === 1005) t += k * 8; if (k === 1006) t += k * 9; if (k === 1007) t += k * 10; if (k === 1008) t += k * 11; if (k === 1009) t += k * 12; if (k === 1010) t += k * 13; if (k === 1011) t += k * 14; if (k === 1012) t += k * 15; if (k === 1013) t += k * 16; if (k === 1014) t += k * 17; if (k === 1015) t += k * 18; if (k === 1016) t += k * 19; if (k === 1017) t += k * 20; if (k === 1018) t += k * 21; if (k === 1019) t += k * 22; if (k === 1020) t += k * 23; if (k === 1021) t += k * 24; if (k === 1022) t += k * 25; if (k === 1023) t += k * 26; if (k === 1024) t += k * 27; if (k === 1025) t += k * 28; if (k === 1026) t += k * 29; if (k === 1027) t += k * 30; if (k === 1028) t += k * 31; if (k === 1029) t += k * 32; if (k === 1030) t += k * 33; if (k === 1031) t += k * 34; if (k === 1032) t += k * 35; if (k === 1033) t += k * 36; if (k === 1034) t += k * 37; if (k === 1035) t += k * 38; if (k === 1036) t += k * 39; if (k === 1037) t += k * 40; if (k === 1038) t += k * 41; if (k === 1039) t += k * 42; if (k === 1040) t += k * 43; if (k === 1041) t += k * 44; if (k === 1042) t += k * 45; if (k === 1043) t += k * 46; if (k === 1044) t += k * 47; if (k === 1045) t += k * 48; if (k === 1046) t += k * 49; if (k === 1047) t += k * 50;
  return t;
}

function middleFn(n, k) {
  let t = 0;
  for (let i = 0; i < 4; i++) t ^= innerFn(n, k);
  if (k === 1000) t += k * 3; if (k === 1001) t += k * 4; if (k === 1002) t += k * 5; if (k === 1003) t += k * 6; if (k === 1004) t += k * 7; if (k === 1005) t += k * 8; if (k === 1006) t += k * 9; if (k === 1007) t += k * 10; if (k === 1008) t += k * 11; if (k === 1009) t += k * 12; if (k === 1010) t += k * 13; if (k === 1011) t += k * 14; if (k === 1012) t += k * 15; if (k === 1013) t += k * 16; if (k === 1014) t += k * 17; if (k === 1015) t += k * 18; if (k === 1016) t += k * 19; if (k === 1017) t += k * 20; if (k === 1018) t += k * 21; if (k === 1019) t += k * 22; if (k === 1020) t += k * 23; if (k === 1021) t += k * 24; if (k === 1022) t += k * 25; if (k === 1023) t += k * 26; if (k === 1024) t += k * 27; if (k === 1025) t += k * 28; if (k === 1026) t += k * 29; if (k === 1027) t += k * 30; if (k === 1028) t += k * 31; if (k === 1029) t += k * 32; if (k === 1030) t += k * 33; if (k === 1031) t += k * 34; if (k === 1032) t += k * 35; if (k === 1033) t += k * 36; if (k === 1034) t += k * 37; if (k === 1035) t += k * 38; if (k === 1036) t += k * 39; if (k === 1037) t += k * 40; if (k === 1038) t += k * 41; if (k === 1039) t += k * 42; if (k === 1040) t += k * 43; if (k === 1041) t += k * 44; if (k === 1042) t += k * 45; if (k === 1043) t += k * 46; if (k === 1044) t += k * 47; if (k === 1045) t += k * 48; if (k === 1046) t += k * 49; if (k === 1047) t += k * 50;
  return t;
}

function outerFn(until, k) {
  let t = 0;
  while (process.cpuUsage().user < until)
    for (let i = 0; i < 8; i++) t ^= middleFn(200000, k);
  if (k === 1000) t += k * 3; if (k === 1001) t += k * 4; if (k === 1002) t += k * 5; if (k === 1003) t += k * 6; if (k === 1004) t += k * 7; if (k === 1005) t += k * 8; if (k === 1006) t += k * 9; if (k === 1007) t += k * 10; if (k === 1008) t += k * 11; if (k === 1009) t += k * 12; if (k === 1010) t += k * 13; if (k === 1011) t += k * 14; if (k === 1012) t += k * 15; if (k === 1013) t += k * 16; if (k === 1014) t += k * 17; if (k === 1015) t += k * 18; if (k === 1016) t += k * 19; if (k === 1017) t += k * 20; if (k === 1018) t += k * 21; if (k === 1019) t += k * 22; if (k === 1020) t += k * 23; if (k === 1021) t += k * 24; if (k === 1022) t += k * 25; if (k === 1023) t += k * 26; if (k === 1024) t += k * 27; if (k === 1025) t += k * 28; if (k === 1026) t += k * 29; if (k === 1027) t += k * 30; if (k === 1028) t += k * 31; if (k === 1029) t += k * 32; if (k === 1030) t += k * 33; if (k === 1031) t += k * 34; if (k === 1032) t += k * 35; if (k === 1033) t += k * 36; if (k === 1034) t += k * 37; if (k === 1035) t += k * 38; if (k === 1036) t += k * 39; if (k === 1037) t += k * 40; if (k === 1038) t += k * 41; if (k === 1039) t += k * 42; if (k === 1040) t += k * 43; if (k === 1041) t += k * 44; if (k === 1042) t += k * 45; if (k === 1043) t += k * 46; if (k === 1044) t += k * 47; if (k === 1045) t += k * 48; if (k === 1046) t += k * 49; if (k === 1047) t += k * 50;
  return t;
}

outerFn(Number(process.argv[2] || 3) * 1e6, Number(process.argv[3] || 0));
