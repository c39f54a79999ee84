// Runs Apache RocketMQ's mqadmin (org.apache.rocketmq.tools.command.MQAdminStartup, 4.9.7)
// many times in one JVM, for tests/test_mqadmin.py: a JVM start per command costs ~1.5 s, a
// call in a warm JVM a few milliseconds plus the command's own network time.
//
// Launched as a single-file source program (`java -cp <rocketmq-tools classpath>
// MQAdminDriver.java`), so nothing is compiled or packaged ahead. Protocol: one command per
// stdin line, tab-separated: a time limit in milliseconds, then the arguments (exactly what
// would follow `mqadmin` on a shell line). For each, one JSON line on stdout: {"args": [...],
// "output": "<everything the command printed to stdout and stderr>", "ms": <elapsed>,
// "interrupted": <bool>, "exited": false}. A command still running at its time limit is
// interrupted (clusterRT, for one, measures in an endless loop with a sleep between rounds;
// the interrupt ends that sleep and the command prints the InterruptedException and returns).
// End of input ends the JVM.
//
// MQAdminStartup.main0 prints a failing command's exception and returns; only a command line
// that does not parse makes it call System.exit(1) (ServerUtil.parseCmdLine). A shutdown hook
// then reports that command's output with "exited": true, so the caller sees why.
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.rocketmq.tools.command.MQAdminStartup;

public class MQAdminDriver extends MQAdminStartup {
    private static final PrintStream REAL_OUT =
        new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static volatile String[] running;
    private static volatile ByteArrayOutputStream captured;
    private static volatile long startNanos;

    public static void main(String[] argv) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (running != null) {
                report(running, captured, false, true);
            }
        }));
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = readLine(in)) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] fields = line.split("\t");
            long limitMillis = Long.parseLong(fields[0]);
            String[] args = Arrays.copyOfRange(fields, 1, fields.length);
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            PrintStream capture = new PrintStream(buffer, true, StandardCharsets.UTF_8);
            captured = buffer;
            startNanos = System.nanoTime();
            running = args;
            System.setOut(capture);
            System.setErr(capture);
            Thread worker = new Thread(() -> runOne(args, capture), "mqadmin-" + args[0]);
            boolean interrupted = false;
            try {
                worker.start();
                worker.join(limitMillis);
                if (worker.isAlive()) {
                    interrupted = true;
                    worker.interrupt();
                    worker.join();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } finally {
                capture.flush();
                System.setOut(REAL_OUT);
                System.setErr(REAL_OUT);
                running = null;
            }
            report(args, buffer, interrupted, false);
        }
    }

    private static void runOne(String[] args, PrintStream capture) {
        try {
            // main0 appends fresh sub-command objects to a static list on every call and
            // runs the first match; several commands (sendMessage's producer) cannot run
            // twice, so each call starts from an empty list.
            subCommandList.clear();
            MQAdminStartup.main(args);
        } catch (Throwable t) {
            t.printStackTrace(capture);
        }
    }

    private static void report(
            String[] args, ByteArrayOutputStream output, boolean interrupted, boolean exited) {
        JSONObject result = new JSONObject(true);
        result.put("args", Arrays.asList(args));
        result.put("output", output.toString(StandardCharsets.UTF_8));
        result.put("ms", (System.nanoTime() - startNanos) / 1_000_000);
        result.put("interrupted", interrupted);
        result.put("exited", exited);
        REAL_OUT.println(result.toJSONString());
    }

    private static String readLine(BufferedReader in) {
        try {
            return in.readLine();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
