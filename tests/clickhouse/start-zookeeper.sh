#!/usr/bin/env bash
# Start a standalone ZooKeeper (Debian's zookeeper package, run by java
# directly: no systemd, no /etc/zookeeper) in the background for the
# replicated test cluster: start-zookeeper.sh DIR PORT. Data, config and log
# stay under DIR; it listens on 127.0.0.1:PORT only. Prints its pid once it
# answers "ruok"; exits 1 if it does not within 30 s.
set -euo pipefail
dir=$1 port=$2
jar=/usr/share/java/zookeeper.jar
mkdir -p "$dir/data"
cat >"$dir/zoo.cfg" <<CFG
tickTime=500
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=200
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
CFG
cat >"$dir/log4j.properties" <<CFG
log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=$dir/zookeeper.log
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d %p %c: %m%n
CFG
# zookeeper.jar's manifest names its libraries; log4j is the log binding.
cp="$dir:$jar"
for j in /usr/share/java/log4j-1.2.jar /usr/share/java/slf4j-log4j12.jar; do
  [ -r "$j" ] && cp="$cp:$j"
done
java -Xmx256m -XX:+UseSerialGC -cp "$cp" -Dzookeeper.log.dir="$dir" \
  org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" >"$dir/stdout.log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 300); do
  if [ "$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && echo ruok >&3 && cat <&3" 2>/dev/null)" = imok ]; then
    echo "$pid"
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
echo "zookeeper on $port did not start; see $dir" >&2
kill "$pid" 2>/dev/null || true
exit 1
