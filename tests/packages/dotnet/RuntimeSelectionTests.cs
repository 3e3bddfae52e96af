// Which of the package's servers a test process runs: the runtime identifier for every platform
// the package can carry a server for, and the server the build copied for each RID it carries.
using System.Runtime.InteropServices;
using Cerulean.Testing;
using Xunit;

namespace Cerulean.Testing.Sample;

public sealed class RuntimeSelectionTests
{
    public static TheoryData<string, Architecture, bool, string> Platforms => new()
    {
        { "WINDOWS", Architecture.X64, false, "win-x64" },
        { "LINUX", Architecture.X64, false, "linux-x64" },
        { "LINUX", Architecture.Arm64, false, "linux-arm64" },
        { "LINUX", Architecture.X64, true, "linux-musl-x64" },
        { "LINUX", Architecture.Arm64, true, "linux-musl-arm64" },
        { "OSX", Architecture.Arm64, false, "osx-arm64" },
        { "OSX", Architecture.X64, false, "osx-x64" },
    };

    [Theory]
    [MemberData(nameof(Platforms))]
    public void EveryPlatformHasItsRuntimeIdentifier(string os, Architecture architecture, bool musl, string rid)
    {
        Assert.Equal(rid, CeruleanBinary.RuntimeIdentifierFor(OSPlatform.Create(os), architecture, musl));
        Assert.Contains(rid, CeruleanBinary.RuntimeIdentifiers);
        Assert.Equal(rid.StartsWith("win-") ? "cerulean.exe" : "cerulean", CeruleanBinary.ExecutableName(rid));
    }

    [Fact]
    public void TheSevenRuntimeIdentifiersAreAllCovered()
    {
        Assert.Equal(Platforms.Select(row => (string)row[3]).OrderBy(r => r),
                     CeruleanBinary.RuntimeIdentifiers.OrderBy(r => r));
    }

    [Theory]
    [InlineData("WINDOWS", Architecture.Arm64, false)]
    [InlineData("LINUX", Architecture.X86, false)]
    [InlineData("LINUX", Architecture.Arm, true)]
    [InlineData("FREEBSD", Architecture.X64, false)]
    public void PlatformsWithoutAServerHaveNone(string os, Architecture architecture, bool musl)
    {
        Assert.Null(CeruleanBinary.RuntimeIdentifierFor(OSPlatform.Create(os), architecture, musl));
    }

    [Fact]
    public void ThisProcessRunsTheServerOfItsOwnRuntimeIdentifier()
    {
        // The test machine: Linux x64 with glibc.
        Assert.Equal("linux-x64", CeruleanBinary.CurrentRuntimeIdentifier);
        string? packaged = CeruleanBinary.PackagedPath("linux-x64");
        Assert.NotNull(packaged);
        Assert.Equal(packaged, CeruleanBinary.Resolve());
    }

    // A server without its execute bit (an extraction that drops it) is given it and starts.
    [Fact]
    public async Task AServerWithoutItsExecuteBitStillStarts()
    {
        string dir = Directory.CreateTempSubdirectory("cerulean-noexec-").FullName;
        try
        {
            string copy = Path.Combine(dir, "cerulean");
            File.Copy(CeruleanBinary.Resolve(), copy);
            File.SetUnixFileMode(copy, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.GroupRead);
            await using var server = await CeruleanServer.StartAsync(new CeruleanServerOptions { BinaryPath = copy });
            Assert.True((File.GetUnixFileMode(copy) & UnixFileMode.UserExecute) != 0);
            await server.TableServiceClient.CreateTableAsync("noexec");
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    // The RIDs the package under test carries (tests/packages/dotnet.sh reads them from the .nupkg):
    // the build copied each one's server to runtimes/<rid>/native/.
    [Fact]
    public void TheBuildCopiedEveryPackagedServer()
    {
        string[] packed = (Environment.GetEnvironmentVariable("CERULEAN_PACKED_RIDS") ?? "")
            .Split(' ', StringSplitOptions.RemoveEmptyEntries);
        Assert.Contains("linux-x64", packed);
        foreach (string rid in packed)
        {
            string? path = CeruleanBinary.PackagedPath(rid);
            Assert.True(path != null, $"no server for {rid} in the build output");
            Assert.EndsWith(Path.Combine("runtimes", rid, "native", CeruleanBinary.ExecutableName(rid)), path);
        }
        foreach (string rid in CeruleanBinary.RuntimeIdentifiers.Except(packed))
            Assert.Null(CeruleanBinary.PackagedPath(rid));
    }
}
