# Writes (to stdout) an x86-64 assembly file whose function spin_entry calls
# a function with a symbol name of N bytes (argv[1]) that loops for good.
import sys

n = int(sys.argv[1])
name = "pf_longname_" + "A" * (n - len("pf_longname_"))
w = sys.stdout.write
w(".text\n.globl spin_entry\n.type spin_entry,@function\nspin_entry:\n")
w("\tpush %rbp\n\tmov %rsp,%rbp\n\tcall " + name + "\n\tpop %rbp\n\tret\n")
w(".size spin_entry,.-spin_entry\n")
w(".type " + name + ",@function\n" + name + ":\n1:\tjmp 1b\n")
w(".size " + name + ",.-" + name + "\n")
w('.section .note.GNU-stack,"",@progbits\n')
