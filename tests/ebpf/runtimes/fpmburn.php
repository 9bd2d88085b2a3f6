<?php
// Served by php-fpm: burns CPU in named functions, prints a number.
function fpm_leaf(int $n): int
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) {
        $x = ($x + $i * $i) % 1000003;
    }
    return $x;
}

function fpm_handler(int $n): int
{
    return fpm_leaf($n);
}

echo fpm_handler(400000), "\n";
