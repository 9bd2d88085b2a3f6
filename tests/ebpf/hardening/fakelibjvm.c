void pf_fake_jvm(void) {}
