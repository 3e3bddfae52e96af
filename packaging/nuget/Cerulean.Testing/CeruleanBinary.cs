using System.Runtime.InteropServices;

namespace Cerulean.Testing;

/// <summary>Thrown when no server executable is found: the platform has no prebuilt server in the
/// package, or the path given does not exist. Its message says how to point at one.</summary>
public sealed class CeruleanBinaryNotFoundException : FileNotFoundException
{
    internal CeruleanBinaryNotFoundException(string message, string? path) : base(message, path) { }
}

/// <summary>Finds the server executable.</summary>
public static class CeruleanBinary
{
    /// <summary>The environment variable that names a server executable.</summary>
    public const string EnvironmentVariable = "CERULEAN_BINARY";

    /// <summary>The platform whose server the package carries.</summary>
    public const string PackagedRuntime = "linux-x64";

    /// <summary>The executable a server would run: <paramref name="explicitPath"/>, else
    /// <c>$CERULEAN_BINARY</c>, else the packaged linux-x64 server (on linux-x64 only).</summary>
    /// <exception cref="CeruleanBinaryNotFoundException">none of those exists.</exception>
    public static string Resolve(string? explicitPath = null)
    {
        if (!string.IsNullOrEmpty(explicitPath))
            return Existing(explicitPath, $"{nameof(CeruleanServerOptions)}.{nameof(CeruleanServerOptions.BinaryPath)}");
        string? fromEnvironment = Environment.GetEnvironmentVariable(EnvironmentVariable);
        if (!string.IsNullOrEmpty(fromEnvironment))
            return Existing(fromEnvironment, $"${EnvironmentVariable}");

        string runtime = CurrentRuntime();
        if (runtime != PackagedRuntime)
        {
            throw new CeruleanBinaryNotFoundException(
                $"Cerulean.Testing carries a prebuilt server for {PackagedRuntime} only, and this is {runtime}. " +
                $"Build the server from source (bash scripts/build.sh in the Cerulean repository) and set the " +
                $"environment variable {EnvironmentVariable} to its path (build/cerulean), or set " +
                $"{nameof(CeruleanServerOptions)}.{nameof(CeruleanServerOptions.BinaryPath)}.", null);
        }
        // A build without a runtime identifier copies the package's native assets under
        // runtimes/<rid>/native/; a build for linux-x64 copies them next to the application.
        var candidates = new List<string>();
        foreach (string? dir in new[] { AppContext.BaseDirectory, Path.GetDirectoryName(typeof(CeruleanBinary).Assembly.Location) })
        {
            if (string.IsNullOrEmpty(dir)) continue;
            candidates.Add(Path.Combine(dir, "runtimes", PackagedRuntime, "native", "cerulean"));
            candidates.Add(Path.Combine(dir, "cerulean"));
        }
        foreach (string candidate in candidates)
            if (File.Exists(candidate)) return candidate;
        throw new CeruleanBinaryNotFoundException(
            $"The packaged Cerulean server was not found (looked for {string.Join(", ", candidates)}). " +
            $"Check that the build copies the Cerulean.Testing package's runtimes/{PackagedRuntime}/native/cerulean, " +
            $"or set {EnvironmentVariable} to a server executable.", candidates.FirstOrDefault());
    }

    static string Existing(string path, string source)
    {
        string full = Path.GetFullPath(path);
        if (!File.Exists(full))
            throw new CeruleanBinaryNotFoundException($"{source} names {full}, which does not exist.", full);
        return full;
    }

    static string CurrentRuntime()
    {
        string os = OperatingSystem.IsLinux() ? "linux"
            : OperatingSystem.IsMacOS() ? "osx"
            : OperatingSystem.IsWindows() ? "win"
            : RuntimeInformation.OSDescription;
        return $"{os}-{RuntimeInformation.OSArchitecture.ToString().ToLowerInvariant()}";
    }

    /// <summary>Makes <paramref name="path"/> executable if it is not (a NuGet extraction may drop
    /// the bit); returns a path that is, a private copy when the file cannot be changed.</summary>
    internal static string EnsureExecutable(string path)
    {
        if (OperatingSystem.IsWindows()) return path;
        const UnixFileMode execute = UnixFileMode.UserExecute | UnixFileMode.GroupExecute | UnixFileMode.OtherExecute;
        UnixFileMode mode = File.GetUnixFileMode(path);
        if ((mode & UnixFileMode.UserExecute) != 0) return path;
        try
        {
            File.SetUnixFileMode(path, mode | execute);
            return path;
        }
        catch (Exception e) when (e is UnauthorizedAccessException or IOException)
        {
            string dir = Directory.CreateTempSubdirectory("cerulean-bin-").FullName;
            string copy = Path.Combine(dir, "cerulean");
            File.Copy(path, copy);
            File.SetUnixFileMode(copy, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute);
            return copy;
        }
    }
}
