import Fleet
import Testing

@Suite struct MeasuredLoadTests {
    @Test("a steady load is measured as it is: 1.5 cores busy for 1 s of wall time each second")
    func steady() {
        var load = MeasuredLoad()
        for second in 0...30 { load.sample(cpuMicros: Int64(second) * 1_500_000, wallMicros: Int64(second) * 1_000_000) }
        #expect(load.millicores == 1_500)
    }

    @Test("one busy second moves the average by its weight only, and it decays back")
    func smoothing() {
        var load = MeasuredLoad(weight: 0.2)
        var cpu: Int64 = 0
        load.sample(cpuMicros: 0, wallMicros: 0)
        for second in 1...10 { cpu += 500_000; load.sample(cpuMicros: cpu, wallMicros: Int64(second) * 1_000_000) }
        #expect(load.millicores == 500)
        cpu += 2_000_000
        load.sample(cpuMicros: cpu, wallMicros: 11_000_000)
        #expect(load.millicores == 800) // 500 + 0.2 × (2000 − 500)
        for second in 12...40 { cpu += 500_000; load.sample(cpuMicros: cpu, wallMicros: Int64(second) * 1_000_000) }
        #expect((500...505).contains(load.millicores))
    }

    @Test("no figure before two samples; samples too close, or going backwards, change nothing")
    func ignored() {
        var load = MeasuredLoad()
        load.sample(cpuMicros: 1_000_000, wallMicros: 1_000_000)
        #expect(load.millicores == 0)
        load.sample(cpuMicros: 2_000_000, wallMicros: 1_050_000) // 50 ms later
        #expect(load.millicores == 0)
        load.sample(cpuMicros: 1_500_000, wallMicros: 2_000_000)
        #expect(load.millicores == 500)
        load.sample(cpuMicros: 100, wallMicros: 3_000_000) // CPU time going backwards
        #expect(load.millicores == 500)
    }

    @Test("hostile samples never trap and stay bounded", arguments: [Int64.min, -1, 0, 1, Int64.max])
    func extremes(value: Int64) {
        var load = MeasuredLoad(weight: .nan)
        for wall in [Int64.min, 0, 200_000, Int64.max, value] {
            load.sample(cpuMicros: value, wallMicros: wall)
            load.sample(cpuMicros: Int64.max, wallMicros: value)
        }
        #expect((0...1_024_000).contains(load.millicores))
    }
}
