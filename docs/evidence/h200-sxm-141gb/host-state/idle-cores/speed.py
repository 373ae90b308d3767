import time, sys, json
out = []
end = time.time() + float(sys.argv[1])
while time.time() < end:
    c = time.thread_time(); s = 0
    for i in range(100_000): s += i * i % 7
    out.append((round(time.time(), 3), round((time.thread_time() - c) * 1e3, 3)))
    time.sleep(0.15)
json.dump(out, open(sys.argv[2], "w"))
