<?php
// A 3-deep named call chain below the file's own code: outer -> middle ->
// Worker::spin, which burns CPU until ARGV[1] seconds have passed.
class Worker
{
    public function spin(float $t_end): int
    {
        $x = 0;
        while (microtime(true) < $t_end) {
            for ($i = 0; $i < 20000; $i++) {
                $x = ($x + $i * $i) % 1000003;
            }
        }
        return $x;
    }
}

function middle(float $t_end): int
{
    $w = new Worker();
    return $w->spin($t_end);
}

function outer(float $secs): int
{
    return middle(microtime(true) + $secs);
}

echo outer((float)($argv[1] ?? 5)), "\n";
