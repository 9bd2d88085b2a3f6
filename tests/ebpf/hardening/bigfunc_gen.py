# Writes a Python program (to stdout) whose function hugefunc has 48,000
# lines (a line table of about 240 KB) and recurses 90 deep into itself,
# doing its work at the deepest level, for good.
print("import sys")
print("sys.setrecursionlimit(1000)")
print("def hugefunc(n):")
print("    if n > 0:")
print("        return hugefunc(n - 1)")
print("    x = 0")
for i in range(48000):
    print(f"    x = {i % 7}")
print("    return x")
print("def hugefunc_main():")
print("    while True:")
print("        hugefunc(90)")
print("hugefunc_main()")
