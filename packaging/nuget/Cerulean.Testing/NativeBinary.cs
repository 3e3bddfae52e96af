using System.Runtime.InteropServices;

namespace Cerulean.Testing;

// Which of the package's servers (runtimes/<rid>/native/) this process runs, and where the build
// put it.
public static partial class CeruleanBinary
{
    /// <summary>The runtime identifiers the package can carry a server for, as NuGet names them
    /// (runtimes/&lt;rid&gt;/native/cerulean, cerulean.exe on Windows). A release carries those whose
    /// server was built for it.</summary>
    public static IReadOnlyList<string> RuntimeIdentifiers { get; } = new[]
    {
        "win-x64", "linux-x64", "linux-arm64", "linux-musl-x64", "linux-musl-arm64", "osx-arm64", "osx-x64",
    };

    /// <summary>The runtime identifier of the server for a process on <paramref name="os"/> (Windows,
    /// Linux or OSX) and <paramref name="architecture"/>, with musl as its C library on Linux iff
    /// <paramref name="musl"/>; null when the package has none for it.</summary>
    public static string? RuntimeIdentifierFor(OSPlatform os, Architecture architecture, bool musl)
    {
        string? arch = architecture switch
        {
            Architecture.X64 => "x64",
            Architecture.Arm64 => "arm64",
            _ => null,
        };
        if (arch == null) return null;
        string rid;
        if (os == OSPlatform.Windows) rid = $"win-{arch}";
        else if (os == OSPlatform.OSX) rid = $"osx-{arch}";
        else if (os == OSPlatform.Linux) rid = musl ? $"linux-musl-{arch}" : $"linux-{arch}";
        else return null;
        return RuntimeIdentifiers.Contains(rid) ? rid : null;
    }

    /// <summary>The runtime identifier of the server for this process (its OS, its process
    /// architecture, which under emulation differs from the machine's, and on Linux whether it
    /// runs on musl); null when the package has none for it.</summary>
    public static string? CurrentRuntimeIdentifier => RuntimeIdentifierFor(CurrentOS(), RuntimeInformation.ProcessArchitecture, IsMusl());

    /// <summary>The server's file name for <paramref name="runtimeIdentifier"/>.</summary>
    public static string ExecutableName(string runtimeIdentifier) =>
        runtimeIdentifier.StartsWith("win-", StringComparison.Ordinal) ? "cerulean.exe" : "cerulean";

    /// <summary>Where the build put the package's server for <paramref name="runtimeIdentifier"/>:
    /// a build without a runtime identifier copies every native asset under
    /// runtimes/&lt;rid&gt;/native/, a build for one RID copies its asset next to the application.
    /// Null when neither exists. <paramref name="searched"/> receives the paths looked at.</summary>
    public static string? PackagedPath(string runtimeIdentifier, List<string>? searched = null)
    {
        string exe = ExecutableName(runtimeIdentifier);
        var dirs = new[] { AppContext.BaseDirectory, Path.GetDirectoryName(typeof(CeruleanBinary).Assembly.Location) }
            .Where(d => !string.IsNullOrEmpty(d)).Distinct();
        var candidates = new List<string>();
        foreach (string? dir in dirs) candidates.Add(Path.Combine(dir!, "runtimes", runtimeIdentifier, "native", exe));
        // Next to the application only in a build for this very RID (another RID's asset there
        // would be a different executable of the same name).
        if (runtimeIdentifier == RuntimeInformation.RuntimeIdentifier)
            foreach (string? dir in dirs) candidates.Add(Path.Combine(dir!, exe));
        searched?.AddRange(candidates);
        return candidates.FirstOrDefault(File.Exists);
    }

    static OSPlatform CurrentOS() =>
        OperatingSystem.IsWindows() ? OSPlatform.Windows
        : OperatingSystem.IsMacOS() ? OSPlatform.OSX
        : OperatingSystem.IsLinux() ? OSPlatform.Linux
        : OSPlatform.Create(RuntimeInformation.OSDescription);

    // musl, as .NET itself tells it: its runtime for musl has a RID "linux-musl-*". Otherwise the
    // dynamic loaders decide: musl's /lib/ld-musl-<arch>.so.1 and no glibc /lib*/ld-linux-*.so.*
    // (a glibc system may have musl's loader installed beside its own).
    static bool IsMusl()
    {
        if (!OperatingSystem.IsLinux()) return false;
        if (RuntimeInformation.RuntimeIdentifier.StartsWith("linux-musl-", StringComparison.Ordinal)) return true;
        return Loaders("/lib", "ld-musl-*.so.1") && !Loaders("/lib", "ld-linux*.so.*") && !Loaders("/lib64", "ld-linux*.so.*");
    }

    static bool Loaders(string dir, string pattern)
    {
        try
        {
            return Directory.Exists(dir) && Directory.EnumerateFiles(dir, pattern).Any();
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return false;
        }
    }
}
