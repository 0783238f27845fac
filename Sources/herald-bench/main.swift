print("herald-bench: no benchmarks yet")
